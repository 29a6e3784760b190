import * as z from 'zod';

/**
 * Parse configuration once, at cold start, with zod over process.env. A missing or malformed variable fails fast
 * with its name, so a misconfigured function never serves a request.
 */
export function parseEnv<S extends z.ZodObject<z.ZodRawShape>>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  const result = schema.safeParse(env);
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
  z
    .string()
    .default(fallback)
    .transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    );

export const boolEnv = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0'])
    .default(fallback ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1');

/** Settings every HTTP function shares: how tokens are verified. */
export const authEnv = {
  AUTH_ISSUER: z.string().url(),
  /** Required and never empty: an empty list would turn the audience check off. */
  AUTH_AUDIENCE: z
    .string({ error: 'AUTH_AUDIENCE is required (comma-separated accepted audiences)' })
    .transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .refine((a) => a.length > 0, 'AUTH_AUDIENCE names no audience'),
  /** Defaults to the OIDC convention {issuer}/.well-known/jwks.json. */
  AUTH_JWKS_URI: z.string().url().optional(),
  /** Claims whose values are roles (arrays, or space/comma separated strings). "a/b" counts as role "b". */
  AUTH_ROLES_CLAIMS: csv('roles,cognito:groups,scope'),
  /** Claims whose values are group (study) memberships. */
  AUTH_GROUPS_CLAIMS: csv('groups'),
  AUTH_ADMIN_ROLE: z.string().default('admin'),
  AUTH_SERVICE_ROLE: z.string().default('service'),
  /** Clock-skew grace in seconds; capped at 1 s. */
  AUTH_GRACE_SECONDS: z.coerce.number().int().min(0).max(1).default(0),
};
