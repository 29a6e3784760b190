import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { clientCredentials } from '#packages/task-service/src/token.js';
import { type Clock, systemClock } from '../shared/clock.js';
import { parseEnv } from '../shared/config.js';
import { AppError, type ErrorCause, hasCode } from '../shared/errors.js';
import * as z from '../shared/zod.js';

/**
 * The coordinator's own bearer token for calls to task services: OAuth2 client credentials against the configured
 * token endpoint (Cognito, the local identity provider, Auth0...). The token is cached until REFRESH_MARGIN_MS before
 * the token's own expiry (its `exp` claim, or `expires_in`, whichever comes first), never for a fixed time.
 */
export interface TokenProvider {
  /** A bearer token, or null when no token endpoint is configured (requests then go out without one). */
  token(): Promise<string | null>;
}

/**
 * The token endpoint failed or answered nonsense, or the client secret could not be read: a coordinator-side
 * problem, never the caller's. Code `token_unavailable`, which the orchestration treats as transient (it passes when
 * the endpoint recovers).
 */
export class TokenUnavailableError extends AppError {
  override name = 'TokenUnavailableError';
  constructor(detail: string, options?: ErrorCause) {
    super(
      503,
      'token_unavailable',
      'The coordinator could not obtain its access token',
      undefined,
      undefined,
      options,
    );
    this.detail = detail;
  }
  readonly detail: string;
}

export const tokenEnv = z.object({
  COORDINATOR_TOKEN_URL: z.optional(z.url()),
  COORDINATOR_CLIENT_ID: z.optional(z.string()),
  COORDINATOR_CLIENT_SECRET: z.optional(z.string()),
  /** Secrets Manager secret holding the client secret (plain string, or JSON with client_secret). */
  COORDINATOR_CLIENT_SECRET_ARN: z.optional(z.string()),
  COORDINATOR_TOKEN_SCOPE: z.optional(z.string()),
  /** Some providers (Auth0) need an audience parameter. */
  COORDINATOR_TOKEN_AUDIENCE: z.optional(z.string()),
  /** form: client_secret_post (default); basic: HTTP Basic client auth; json: a JSON body. */
  COORDINATOR_TOKEN_STYLE: z._default(z.enum(['form', 'basic', 'json']), 'form'),
});
export type TokenEnv = z.infer<typeof tokenEnv>;

/** Refresh this long before the token expires, so a token is never presented in its last seconds. */
export const REFRESH_MARGIN_MS = 30_000;

export interface TokenClientDeps {
  fetch?: typeof fetch;
  clock?: Clock;
  /** Resolves the client secret from COORDINATOR_CLIENT_SECRET_ARN. */
  secret?: (arn: string) => Promise<string>;
}

async function secretFromSecretsManager(arn: string): Promise<string> {
  const client = new SecretsManagerClient({});
  const out = await client.send(new GetSecretValueCommand({ SecretId: arn }));
  const raw = out.SecretString ?? '';
  try {
    const parsed = JSON.parse(raw);
    const v = parsed?.client_secret ?? parsed?.clientSecret ?? parsed?.secret;
    if (typeof v === 'string') return v;
  } catch {
    // not JSON: the secret string is the client secret itself
  }
  return raw;
}

/**
 * The coordinator's token source: the task-service kit's client-credentials cache
 * (packages/task-service/src/token.ts) configured from the env. Every failure, of the token endpoint or of reading
 * the client secret, is a TokenUnavailableError.
 */
export function createTokenClient(env: TokenEnv, deps: TokenClientDeps = {}): TokenProvider {
  const tokenUrl = env.COORDINATOR_TOKEN_URL;
  if (!tokenUrl) return { token: async () => null };
  const clock = deps.clock ?? systemClock;
  const loadSecret = deps.secret ?? secretFromSecretsManager;
  let secret: Promise<string> | undefined;
  const clientSecret = (): Promise<string> => {
    if (env.COORDINATOR_CLIENT_SECRET !== undefined) return Promise.resolve(env.COORDINATOR_CLIENT_SECRET);
    if (env.COORDINATOR_CLIENT_SECRET_ARN) {
      secret ??= loadSecret(env.COORDINATOR_CLIENT_SECRET_ARN).catch((err) => {
        secret = undefined; // try again next time
        throw new TokenUnavailableError(`the client secret could not be read: ${(err as Error).message}`, {
          cause: err,
        });
      });
      return secret;
    }
    return Promise.resolve('');
  };
  const source = clientCredentials({
    tokenUrl,
    clientId: env.COORDINATOR_CLIENT_ID ?? '',
    clientSecret,
    scope: env.COORDINATOR_TOKEN_SCOPE,
    audience: env.COORDINATOR_TOKEN_AUDIENCE,
    style: env.COORDINATOR_TOKEN_STYLE,
    marginSeconds: REFRESH_MARGIN_MS / 1000,
    fetch: deps.fetch,
    now: () => clock.nowMs(),
  });
  return {
    async token() {
      try {
        return await source();
      } catch (err) {
        if (hasCode(err, 'token_unavailable')) throw err;
        // The kit's error names the step that failed; its cause, when there is one, is what the network said.
        const e = err as Error;
        throw new TokenUnavailableError(e.message, { cause: e.cause ?? e });
      }
    },
  };
}

let shared: TokenProvider | undefined;
/** One token client per container, configured from the env at first use. */
export function tokenClient(): TokenProvider {
  shared ??= createTokenClient(parseEnv(tokenEnv));
  return shared;
}
