import type { Contracts, GroupDoc } from '#functions/shared/contract.js';
import { type Describe, pageOf } from '#functions/shared/contracts/schemas.js';
import { LIMITS } from '#functions/shared/limits.js';
import { pageQuery } from '#functions/shared/list.js';
import * as z from '#functions/shared/zod.js';
import { DevTokenName, Rfc3339, StudyId } from '../model.js';
import type { FilesSchemas } from './schemas.js';

/** The longest lifetime `expires_in` may ask for: ten years (a token that should outlive it needs no expiry). */
export const DEV_TOKEN_MAX_EXPIRES_IN = 10 * 365 * 24 * 3600;

/**
 * Developer download tokens (admins only). A new token may be narrowed: `expires_at` (an RFC 3339 instant) or
 * `expires_in` (seconds from now), not both; and `studies`, the only studies it reaches. Without them it never
 * expires and reaches every study, as the download contract's tokens do.
 */
export const devTokenRoutes = {
  createDevToken: {
    method: 'POST',
    path: '/developer-tokens',
    access: 'admin',
    body: z
      .strictObject({
        name: DevTokenName,
        expires_at: z.optional(z.nullable(Rfc3339)),
        expires_in: z.optional(
          z.nullable(
            z
              .number()
              .check(
                z.int(),
                z.minimum(1, 'must be at least 1 (seconds)'),
                z.maximum(
                  DEV_TOKEN_MAX_EXPIRES_IN,
                  `must be at most ${DEV_TOKEN_MAX_EXPIRES_IN} (ten years)`,
                ),
              ),
          ),
        ),
        studies: z.optional(
          z.nullable(
            z
              .array(StudyId)
              .check(
                z.minLength(1, 'must name at least one study (leave it out for every study)'),
                z.maxLength(LIMITS.studies, `must have at most ${LIMITS.studies} items`),
              ),
          ),
        ),
      })
      .check(
        z.refine((b) => b.expires_at == null || b.expires_in == null, {
          message: 'give expires_at or expires_in, not both',
          path: ['expires_in'],
        }),
      ),
  },
  listDevTokens: { method: 'GET', path: '/developer-tokens', access: 'admin', query: z.object(pageQuery) },
  deleteDevToken: { method: 'DELETE', path: '/developer-tokens/{name}', access: 'admin' },
} as const satisfies Contracts;

export function devTokenDocs(s: FilesSchemas, describe: Describe): GroupDoc<typeof devTokenRoutes> {
  return {
    tag: {
      name: 'Developer tokens',
      description:
        'Long-lived download tokens for scripts (`Authorization: Token …` or `?token=`); admins only.',
    },
    operations: {
      createDevToken: {
        summary: 'Create a developer token',
        description:
          'The answer is the only place the secret is ever shown. Optional: `expires_at` (an RFC 3339 instant) or ' +
          '`expires_in` (seconds), after which the token is refused (default: never); `studies`, the only studies ' +
          'whose files it reaches (default: every study). Both hold for downloads, signed URLs (a link dies with ' +
          'its token) and the GA4GH DRS routes.',
        answers: { 201: s.DevToken },
        errors: { 409: 'A token of that name exists' },
      },
      listDevTokens: {
        summary: 'List developer tokens (masked)',
        answers: { 200: pageOf(describe, s.DevToken) },
      },
      deleteDevToken: {
        summary: 'Revoke a developer token',
        description: 'Signed URLs it minted die with it.',
        params: { name: 'The token name' },
        answers: { 200: { description: 'Revoked; the body is empty' } },
      },
    },
  };
}
