/**
 * The service's own token for its callbacks, by OAuth2 client credentials at the identity provider's token endpoint
 * (TOKEN_URL, CLIENT_ID, CLIENT_SECRET), reused until shortly before it expires. Concurrent callers share one
 * request. `invalidate()` drops it (a 401 from the coordinator: the token was revoked or the clock is off).
 */
export interface TokenSource {
  (): Promise<string | null>;
  invalidate?: () => void;
}

export interface ClientCredentialsOptions {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  /** Scopes to ask for (Cognito: e.g. `coordinator/service`); none asks for the client's defaults. */
  scope?: string;
  /** Seconds before the expiry at which a new token is fetched. */
  marginSeconds?: number;
  fetch?: typeof fetch;
  now?: () => number;
}

export function clientCredentials(opts: ClientCredentialsOptions): TokenSource {
  const fetchImpl = opts.fetch ?? fetch;
  const now = opts.now ?? Date.now;
  const margin = opts.marginSeconds ?? 30;
  let cached: { token: string; until: number } | undefined;
  let pending: Promise<string> | undefined;
  const fetchToken = async (): Promise<string> => {
    const res = await fetchImpl(opts.tokenUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: opts.clientId,
        client_secret: opts.clientSecret,
        ...(opts.scope ? { scope: opts.scope } : {}),
      }),
      signal: AbortSignal.timeout(10_000),
    });
    if (res.status !== 200) {
      await res.arrayBuffer();
      throw new Error(`the token endpoint answered ${res.status}`);
    }
    const body = (await res.json()) as { access_token?: unknown; expires_in?: unknown };
    if (typeof body.access_token !== 'string') throw new Error('the token endpoint answered no access_token');
    const lifetime = typeof body.expires_in === 'number' ? body.expires_in : 300;
    cached = { token: body.access_token, until: now() + Math.max(0, lifetime - margin) * 1000 };
    return body.access_token;
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
