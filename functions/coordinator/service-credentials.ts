import { randomBytes } from 'node:crypto';
import * as z from '../shared/zod.js';

/**
 * What the coordinator keeps for each task service besides its record: the secret that signs every action sent to
 * it (Standard Webhooks, `whsec_…`), the secret it replaced while that one's grace period lasts, and the OAuth client
 * the coordinator created for it, if any (deleted with the service). Stored in an item of its own
 * (functions/adapters/dynamodb/task-services.ts) that no list, index, answer, event or log ever reads; only the
 * registration and rotate-secret answers show a secret, once.
 */
export const serviceCredentialsSchema = z.object({
  signingSecret: z.string(),
  /** The secret before the last rotation, still signed with until `previousUntil`. */
  previousSigningSecret: z._default(z.nullable(z.string()), null),
  previousUntil: z._default(z.nullable(z.string()), null),
  /** The identity provider's client made for this service at registration (create_client), if any. */
  createdClientId: z._default(z.nullable(z.string()), null),
  rotatedAt: z._default(z.nullable(z.string()), null),
});
export type ServiceCredentials = z.infer<typeof serviceCredentialsSchema>;

/**
 * How long a replaced secret still signs: 24 hours, long enough to roll a new secret out to a service's instances
 * without a window in which they refuse the coordinator. `POST /task-services/<id>/rotate-secret` takes
 * `grace_seconds` (0 ends the old secret at once, for a leaked one) up to MAX_SECRET_GRACE_SECONDS.
 */
export const DEFAULT_SECRET_GRACE_SECONDS = 24 * 3600;
export const MAX_SECRET_GRACE_SECONDS = 7 * 24 * 3600;

/** Standard Webhooks' form: `whsec_` and the base64 of the key; 32 random bytes (the scheme allows 24 to 64). */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** A new service's credentials: a fresh signing secret, nothing rotated yet. */
export function freshCredentials(createdClientId: string | null = null): ServiceCredentials {
  return {
    signingSecret: newSigningSecret(),
    previousSigningSecret: null,
    previousUntil: null,
    createdClientId,
    rotatedAt: null,
  };
}

/** The secrets an action is signed with now: the current one, and the previous one while its grace lasts. */
export function activeSecrets(c: ServiceCredentials | null, nowMs: number): string[] {
  if (!c) return [];
  const previous =
    c.previousSigningSecret && c.previousUntil && Date.parse(c.previousUntil) > nowMs
      ? [c.previousSigningSecret]
      : [];
  return [c.signingSecret, ...previous];
}
