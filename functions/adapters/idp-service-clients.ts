import type { ServiceClientProvisioner } from '../coordinator/ports.js';
import { AppError } from '../shared/errors.js';
import * as z from '../shared/zod.js';

/**
 * One client per task service at the local identity provider (`POST /clients`, `DELETE /clients/<id>`,
 * `POST /clients/<id>/secret`: local/idp/client-admin.ts), the stand-in for Cognito's app clients: client credentials, role `service`. The
 * provider's client-management routes take HTTP Basic credentials of one of its clients with the `admin` role, given
 * here by the local stack.
 */
export interface IdpServiceClientsOptions {
  /** The identity provider's base URL. */
  url: string;
  adminClientId: string;
  adminClientSecret: string;
  fetch?: typeof fetch;
}

const created = z.object({
  client_id: z.string().check(z.minLength(1)),
  client_secret: z.string().check(z.minLength(1)),
});

const unavailable = (what: string, detail: string) =>
  new AppError(503, 'identity_provider_unavailable', `The identity provider could not ${what}: ${detail}`);

export function idpServiceClients(options: IdpServiceClientsOptions): ServiceClientProvisioner {
  const doFetch = options.fetch ?? fetch;
  const base = options.url.replace(/\/+$/, '');
  const authorization = `Basic ${Buffer.from(
    `${encodeURIComponent(options.adminClientId)}:${encodeURIComponent(options.adminClientSecret)}`,
  ).toString('base64')}`;
  const request = async (what: string, url: string, init: RequestInit): Promise<Response> => {
    try {
      return await doFetch(url, {
        ...init,
        headers: { Authorization: authorization, 'Content-Type': 'application/json', ...init.headers },
        signal: AbortSignal.timeout(10_000),
      });
    } catch (err) {
      throw unavailable(what, (err as Error)?.message ?? 'unreachable');
    }
  };
  return {
    async create(name) {
      const what = 'create a client for the task service';
      const res = await request(what, `${base}/clients`, { method: 'POST', body: JSON.stringify({ name }) });
      const text = await res.text();
      if (res.status !== 200) throw unavailable(what, `answered ${res.status}`);
      const parsed = z.safeParse(
        created,
        (() => {
          try {
            return JSON.parse(text);
          } catch {
            return null;
          }
        })(),
      );
      if (!parsed.success) throw unavailable(what, 'answered without client_id and client_secret');
      return { clientId: parsed.data.client_id, clientSecret: parsed.data.client_secret };
    },
    async delete(clientId) {
      const what = `delete client ${clientId}`;
      const res = await request(what, `${base}/clients/${encodeURIComponent(clientId)}`, {
        method: 'DELETE',
      });
      await res.arrayBuffer();
      if (res.status !== 200 && res.status !== 204 && res.status !== 404)
        throw unavailable(what, `answered ${res.status}`);
    },
    async replaceSecret(clientId) {
      const what = `replace the secret of client ${clientId}`;
      const res = await request(what, `${base}/clients/${encodeURIComponent(clientId)}/secret`, {
        method: 'POST',
        body: '{}',
      });
      const text = await res.text();
      if (res.status !== 200) throw unavailable(what, `answered ${res.status}`);
      const parsed = z.safeParse(created, parseJson(text));
      if (!parsed.success) throw unavailable(what, 'answered without client_id and client_secret');
      return { clientSecret: parsed.data.client_secret };
    },
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
