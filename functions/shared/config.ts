import { DEFAULT_TASK_SERVICE_CLIENTS_SCOPE } from './auth.js';
import * as z from './zod.js';

/**
 * Parse configuration once, at cold start, with zod over process.env. A missing or malformed variable fails fast
 * with its name, so a misconfigured function never serves a request.
 */
export function parseEnv<S extends z.core.$ZodType<Record<string, unknown>>>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.output<S> {
  const result = z.safeParse(schema, env);
  if (!result.success) {
    const problems = result.error.issues
      .map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`)
      .join('; ');
    throw new Error(`Invalid configuration: ${problems}`);
  }
  return result.data;
}

/** Comma-separated list in an env variable. */
export const csv = (fallback: string) =>
  z.pipe(
    z._default(z.string(), fallback),
    z.transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    ),
  );

export const boolEnv = (fallback: boolean) =>
  z.pipe(
    z._default(z.enum(['true', 'false', '1', '0']), fallback ? 'true' : 'false'),
    z.transform((v) => v === 'true' || v === '1'),
  );

/** Settings every HTTP function shares: how tokens are verified. */
export const authEnv = {
  AUTH_ISSUER: z.url(),
  /** Required and never empty: an empty list would turn the audience check off. */
  AUTH_AUDIENCE: z
    .pipe(
      z.string({ error: 'AUTH_AUDIENCE is required (comma-separated accepted audiences)' }),
      z.transform((s) =>
        s
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean),
      ),
    )
    .check(z.refine((a) => a.length > 0, 'AUTH_AUDIENCE names no audience')),
  /** Defaults to the OIDC convention {issuer}/.well-known/jwks.json. */
  AUTH_JWKS_URI: z.optional(z.url()),
  /** Claims whose values are roles (arrays, or space/comma separated strings). "a/b" counts as role "b". */
  AUTH_ROLES_CLAIMS: csv('roles,cognito:groups,scope'),
  /** Claims whose values are group (study) memberships. */
  AUTH_GROUPS_CLAIMS: csv('groups'),
  AUTH_ADMIN_ROLE: z._default(z.string(), 'admin'),
  AUTH_SERVICE_ROLE: z._default(z.string(), 'service'),
  /** Clock-skew grace in seconds; capped at 1 s. */
  AUTH_GRACE_SECONDS: z._default(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(1)), 0),
  /**
   * The scope a task service's own app client (Cognito, made at registration) must have for its token to be taken on
   * PATCH /tasks/{id} and POST /events without its client id in AUTH_AUDIENCE (auth.ts, verifyServiceClient). Empty
   * turns that off. One scope, no spaces.
   */
  TASK_SERVICE_CLIENTS_SCOPE: z._default(
    z.string().check(z.regex(/^\S*$/, 'must be one scope, without spaces')),
    DEFAULT_TASK_SERVICE_CLIENTS_SCOPE,
  ),
};
