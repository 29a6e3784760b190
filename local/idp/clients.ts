import { z } from 'zod';

/** A client-credentials client of the local identity provider (IDP_CLIENTS). */
export const idpClient = z.strictObject({
  client_id: z.string().min(1),
  client_secret: z.string().min(1),
  roles: z.array(z.string()).default([]),
  groups: z.array(z.string()).default([]),
  /** The `aud` of this client's tokens; default the provider's audience (the APIs'). */
  audience: z.string().min(1).optional(),
});
export type IdpClient = z.infer<typeof idpClient>;

/** The audience of the token the coordinator sends to task services: one the coordinator's APIs never accept. */
export const TASK_SERVICE_AUDIENCE = 'task-services';

/**
 * Clients allowed to use client credentials unless IDP_CLIENTS says otherwise. `coordinator` is the coordinator
 * itself: it calls task services with this token, whose audience is TASK_SERVICE_AUDIENCE, so a task service that
 * replays it against the coordinator is refused (401). `task-service` is for task services calling back
 * (PATCH /tasks, POST /events); `admin` is a machine admin for scripts.
 */
export const DEFAULT_CLIENTS: IdpClient[] = [
  {
    client_id: 'coordinator',
    client_secret: 'coordinator-local-secret',
    roles: ['service'],
    groups: [],
    audience: TASK_SERVICE_AUDIENCE,
  },
  { client_id: 'task-service', client_secret: 'task-service-local-secret', roles: ['service'], groups: [] },
  { client_id: 'admin', client_secret: 'admin-local-secret', roles: ['admin'], groups: [] },
];

/** IDP_CLIENTS: a JSON array of {client_id, client_secret, roles?, groups?}. */
export function parseClients(json: string | undefined): IdpClient[] {
  if (json === undefined || json.trim() === '') return DEFAULT_CLIENTS;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new Error('Invalid configuration: IDP_CLIENTS is not valid JSON');
  }
  const result = z.array(idpClient).min(1).safeParse(raw);
  if (!result.success)
    throw new Error(
      `Invalid configuration: IDP_CLIENTS: ${result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const ids = result.data.map((c) => c.client_id);
  if (new Set(ids).size !== ids.length)
    throw new Error('Invalid configuration: IDP_CLIENTS repeats a client_id');
  return result.data;
}
