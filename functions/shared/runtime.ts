import { createTokenVerifier, type TokenVerifier } from './auth.js';
import { authEnv, parseEnv } from './config.js';
import * as z from './zod.js';

/**
 * Cold-start wiring shared by every HTTP function: auth settings parsed once with zod, and one verifier (and so one
 * JWKS cache) per container.
 */
const httpEnv = z.object({
  ...authEnv,
  /** Fixed public base URL for absolute links; otherwise taken from the request. */
  PUBLIC_BASE_URL: z.optional(z.url()),
});
export type HttpEnv = z.infer<typeof httpEnv>;

let cached: { env: HttpEnv; verifier: TokenVerifier } | undefined;
export function httpRuntime() {
  if (!cached) {
    const env = parseEnv(httpEnv);
    cached = { env, verifier: createTokenVerifier(env) };
  }
  return cached;
}
