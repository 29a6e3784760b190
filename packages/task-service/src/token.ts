/**
 * OAuth2 client credentials with a cache: the one token cache of the repository, used by the kit for a service's
 * callbacks and by the coordinator for its calls to task services.
 */

/**
 * A bearer token for the next request, or null when there is none to send. `invalidate()`, where there is one,
 * drops a cached token (a 401 from the coordinator: the token was revoked or a clock is off).
 *
 * @example
 * ```ts
 * import type { TokenSource } from '@release-coordinator/task-service';
 *
 * const fixed: TokenSource = async () => process.env.CALLBACK_TOKEN ?? null;
 * ```
 */
export interface TokenSource {
  (): Promise<string | null>;
  /** Drops the cached token, so that the next call fetches a new one. */
  invalidate?: () => void;
}

/**
 * How `clientCredentials` asks the identity provider for a token.
 *
 * @example
 * ```ts
 * import type { ClientCredentialsOptions } from '@release-coordinator/task-service';
 *
 * const options: ClientCredentialsOptions = {
 *   tokenUrl: 'https://auth.example.org/oauth2/token',
 *   clientId: 'stager',
 *   clientSecret: process.env.CLIENT_SECRET ?? '',
 *   scope: 'coordinator/service',
 * };
 * ```
 */
export interface ClientCredentialsOptions {
  /** The identity provider's token endpoint. */
  tokenUrl: string;
  /** The client id, or a function that reads it (from a secret store) each time a token is fetched. */
  clientId: string | (() => Promise<string>);
  /** The client secret, or a function that reads it (from a secret store) each time a token is fetched. */
  clientSecret: string | (() => Promise<string>);
  /** Scopes to ask for (Cognito: e.g. `coordinator/service`); none asks for the client's defaults. */
  scope?: string;
  /** An `audience` parameter, for providers that want one (Auth0). */
  audience?: string;
  /**
   * How the client authenticates: `form` (the default) posts its id and secret in the form body
   * (client_secret_post), `basic` sends them as HTTP Basic, `json` posts the parameters as a JSON body.
   */
  style?: 'form' | 'basic' | 'json';
  /** Seconds before the expiry at which a new token is fetched (default 30). */
  marginSeconds?: number;
  /** The fetch that asks the token endpoint (default: the platform's). */
  fetch?: typeof fetch;
  /** The clock, in milliseconds since the epoch (default Date.now). */
  now?: () => number;
}

/** The `exp` claim of a JWT, in ms; null for an opaque token. */
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

/**
 * A token source that fetches a token by OAuth2 client credentials and reuses it until `marginSeconds` before it
 * expires: the earlier of its `exp` claim (for a JWT) and the endpoint's `expires_in`. A token that states neither
 * is used once and not cached, and one that lives less than the margin too. Concurrent callers share one request to
 * the endpoint. A failure is thrown as an Error whose message names what went wrong (the endpoint unreachable, a
 * status other than 200, no access_token) and whose `cause` is the underlying error, if any; the next call asks
 * again.
 *
 * @example
 * ```ts
 * import { clientCredentials } from '@release-coordinator/task-service';
 *
 * const token = clientCredentials({
 *   tokenUrl: 'https://auth.example.org/oauth2/token',
 *   clientId: 'stager',
 *   clientSecret: process.env.CLIENT_SECRET ?? '',
 * });
 * const headers = { Authorization: `Bearer ${await token()}` };
 * ```
 */
export function clientCredentials(opts: ClientCredentialsOptions): TokenSource {
  const fetchImpl = opts.fetch ?? fetch;
  const now = opts.now ?? Date.now;
  const marginMs = (opts.marginSeconds ?? 30) * 1000;
  const style = opts.style ?? 'form';
  let cached: { token: string; until: number } | undefined;
  let pending: Promise<string> | undefined;

  const request = async (): Promise<RequestInit> => {
    const secret = typeof opts.clientSecret === 'string' ? opts.clientSecret : await opts.clientSecret();
    const clientId = typeof opts.clientId === 'string' ? opts.clientId : await opts.clientId();
    const params: Record<string, string> = { grant_type: 'client_credentials' };
    if (style !== 'basic') Object.assign(params, { client_id: clientId, client_secret: secret });
    if (opts.scope) params.scope = opts.scope;
    if (opts.audience) params.audience = opts.audience;
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (style === 'basic') {
      const pair = `${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`;
      headers.Authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
    }
    if (style === 'json') headers['Content-Type'] = 'application/json';
    else headers['Content-Type'] = 'application/x-www-form-urlencoded';
    const body = style === 'json' ? JSON.stringify(params) : new URLSearchParams(params).toString();
    return { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) };
  };

  const fetchToken = async (): Promise<string> => {
    const init = await request();
    let res: Response;
    try {
      res = await fetchImpl(opts.tokenUrl, init);
    } catch (err) {
      throw new Error(`the token endpoint is unreachable: ${(err as Error).message}`, { cause: err });
    }
    const text = await res.text();
    if (res.status !== 200) throw new Error(`the token endpoint answered ${res.status}`);
    let body: { access_token?: unknown; expires_in?: unknown };
    try {
      body = JSON.parse(text);
    } catch (err) {
      throw new Error('the token endpoint answered no access_token', { cause: err });
    }
    const token = body?.access_token;
    if (typeof token !== 'string' || token === '')
      throw new Error('the token endpoint answered no access_token');
    const at = now();
    const lifetime = Number(body.expires_in);
    const expiries = [jwtExpiryMs(token), lifetime > 0 ? at + lifetime * 1000 : null].filter(
      (x): x is number => x !== null,
    );
    cached = { token, until: (expiries.length ? Math.min(...expiries) : at) - marginMs };
    return token;
  };

  const source: TokenSource = async () => {
    if (cached && now() < cached.until) return cached.token;
    pending ??= fetchToken().finally(() => {
      pending = undefined;
    });
    return pending;
  };
  source.invalidate = () => {
    cached = undefined;
  };
  return source;
}
