import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { type Clock, systemClock } from '../shared/clock.js';
import { parseEnv } from '../shared/config.js';
import { AppError, type ErrorCause } from '../shared/errors.js';
import * as z from '../shared/zod.js';

/**
 * The coordinator's own bearer token for calls to task services: OAuth2 client credentials against the configured
 * token endpoint (Cognito, the local identity provider, Auth0...). The token is cached until REFRESH_MARGIN before
 * the token's own expiry (its `exp` claim, or `expires_in`, whichever comes first) - never for a fixed time.
 */
export interface TokenProvider {
  /** A bearer token, or null when no token endpoint is configured (requests then go out without one). */
  token(): Promise<string | null>;
}

/**
 * The token endpoint failed or answered nonsense: a coordinator-side problem, never the caller's. Code
 * `token_unavailable`, which the orchestration treats as transient (it passes when the endpoint recovers).
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

const tokenResponse = z.object({
  access_token: z.string().check(z.minLength(1)),
  expires_in: z.optional(z.coerce.number().check(z.positive())),
});

/** The `exp` claim of a JWT, in ms; null for opaque tokens. */
function jwtExpiryMs(token: string): number | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  try {
    const payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    return typeof payload?.exp === 'number' ? payload.exp * 1000 : null;
  } catch {
    return null;
  }
}

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

export function createTokenClient(env: TokenEnv, deps: TokenClientDeps = {}): TokenProvider {
  const doFetch = deps.fetch ?? fetch;
  const clock = deps.clock ?? systemClock;
  const loadSecret = deps.secret ?? secretFromSecretsManager;
  let cached: { token: string; refreshAt: number } | undefined;
  let inflight: Promise<string> | undefined;
  let secret: Promise<string> | undefined;

  const clientSecret = (): Promise<string> => {
    if (env.COORDINATOR_CLIENT_SECRET !== undefined) return Promise.resolve(env.COORDINATOR_CLIENT_SECRET);
    if (env.COORDINATOR_CLIENT_SECRET_ARN) {
      secret ??= loadSecret(env.COORDINATOR_CLIENT_SECRET_ARN).catch((err) => {
        secret = undefined; // try again next time
        throw err;
      });
      return secret;
    }
    return Promise.resolve('');
  };

  const fetchToken = async (): Promise<string> => {
    const url = env.COORDINATOR_TOKEN_URL as string;
    const id = env.COORDINATOR_CLIENT_ID ?? '';
    const sec = await clientSecret();
    const params: Record<string, string> = { grant_type: 'client_credentials' };
    if (env.COORDINATOR_TOKEN_STYLE !== 'basic') Object.assign(params, { client_id: id, client_secret: sec });
    if (env.COORDINATOR_TOKEN_SCOPE) params.scope = env.COORDINATOR_TOKEN_SCOPE;
    if (env.COORDINATOR_TOKEN_AUDIENCE) params.audience = env.COORDINATOR_TOKEN_AUDIENCE;
    const headers: Record<string, string> = { Accept: 'application/json' };
    let body: string;
    if (env.COORDINATOR_TOKEN_STYLE === 'json') {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(params);
    } else {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(params).toString();
    }
    if (env.COORDINATOR_TOKEN_STYLE === 'basic')
      headers.Authorization = `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(sec)}`).toString('base64')}`;
    let res: Response;
    try {
      res = await doFetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
    } catch (err) {
      throw new TokenUnavailableError(`token endpoint unreachable: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const text = await res.text();
    if (res.status !== 200) throw new TokenUnavailableError(`token endpoint answered ${res.status}`);
    let parsed: z.infer<typeof tokenResponse>;
    try {
      parsed = tokenResponse.parse(JSON.parse(text));
    } catch (err) {
      throw new TokenUnavailableError('token endpoint answered without an access_token', { cause: err });
    }
    const now = clock.nowMs();
    const expiries = [
      jwtExpiryMs(parsed.access_token),
      parsed.expires_in !== undefined ? now + parsed.expires_in * 1000 : null,
    ].filter((x): x is number => x !== null);
    // Without any expiry information the token is used once and not cached.
    const expiresAt = expiries.length ? Math.min(...expiries) : now;
    cached = { token: parsed.access_token, refreshAt: expiresAt - REFRESH_MARGIN_MS };
    return parsed.access_token;
  };

  return {
    async token() {
      if (!env.COORDINATOR_TOKEN_URL) return null;
      if (cached && clock.nowMs() < cached.refreshAt) return cached.token;
      // Concurrent callers share one request to the token endpoint.
      inflight ??= fetchToken().finally(() => {
        inflight = undefined;
      });
      return inflight;
    },
  };
}

let shared: TokenProvider | undefined;
/** One token client per container, configured from the env at first use. */
export function tokenClient(): TokenProvider {
  shared ??= createTokenClient(parseEnv(tokenEnv));
  return shared;
}
