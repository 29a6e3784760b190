import { JwtVerifier } from 'aws-jwt-verify';
import { SimpleJwksCache } from 'aws-jwt-verify/jwk';
import type { JwtPayload } from 'aws-jwt-verify/jwt-model';
import { UnauthorizedError } from './errors.js';

/** Who is calling, derived from a verified JWT (or nobody). Roles are re-read from the token on every request. */
export interface Principal {
  readonly kind: 'anonymous' | 'user';
  readonly sub: string | null;
  /**
   * The caller's identity for binding a task service to its OAuth client: the token's `client_id` claim when it has
   * one (client-credentials tokens, Cognito access tokens), else its `sub`.
   */
  readonly clientId: string | null;
  readonly roles: readonly string[];
  /** Study ids the caller belongs to. */
  readonly groups: readonly string[];
  readonly isAdmin: boolean;
  readonly isService: boolean;
  /**
   * Accepted only as a task service's own app client (`verifyServiceClient`): it may write about the task service
   * bound to its client id and nothing else (functions/coordinator/identity.ts).
   */
  readonly boundClientOnly?: boolean;
  readonly claims: Readonly<Record<string, unknown>>;
}

export const ANONYMOUS: Principal = Object.freeze({
  kind: 'anonymous',
  sub: null,
  clientId: null,
  roles: [],
  groups: [],
  isAdmin: false,
  isService: false,
  claims: {},
});

export interface AuthConfig {
  AUTH_ISSUER: string;
  AUTH_AUDIENCE: string[];
  AUTH_JWKS_URI?: string;
  AUTH_ROLES_CLAIMS: string[];
  AUTH_GROUPS_CLAIMS: string[];
  AUTH_ADMIN_ROLE: string;
  AUTH_SERVICE_ROLE: string;
  AUTH_GRACE_SECONDS: number;
  /**
   * The scope that lets a task service's own app client (made per service at registration, so in no audience list)
   * call the task-service callbacks: see `verifyServiceClient`. Empty: no such token is accepted.
   */
  TASK_SERVICE_CLIENTS_SCOPE?: string;
}

/** The scope of the app clients Cognito makes for task services (lib/auth.ts SERVICE_SCOPE): the default. */
export const DEFAULT_TASK_SERVICE_CLIENTS_SCOPE = 'coordinator/service';

export interface TokenVerifier {
  /** Verifies a bearer JWT; throws UnauthorizedError on any problem. */
  verify(token: string): Promise<Principal>;
  /**
   * Verifies the token of a task service's own app client, for the routes that take one (a contract's
   * `serviceClients`: PATCH /tasks/{id}, POST /events, GET /tasks, GET /tasks/{id}) when `verify` refused it.
   * Absent: no such token is accepted.
   */
  verifyServiceClient?(token: string): Promise<Principal>;
}

/** Claim values may be arrays or space/comma separated strings; "resource/admin" (OAuth scope) counts as "admin". */
function claimValues(payload: JwtPayload, names: string[]): string[] {
  const out: string[] = [];
  for (const name of names) {
    const v = payload[name];
    const items = Array.isArray(v) ? v : typeof v === 'string' ? v.split(/[\s,]+/) : [];
    for (const item of items) if (typeof item === 'string' && item) out.push(item);
  }
  return out;
}

/** The JWKS is fetched with the platform fetch so http:// issuers (the local identity provider) work too. */
const fetcher = {
  async fetch(uri: string): Promise<ArrayBuffer> {
    const res = await fetch(uri, { signal: AbortSignal.timeout(5000) });
    if (res.status !== 200) throw new Error(`JWKS fetch from ${uri} answered ${res.status}`);
    return res.arrayBuffer();
  },
};

/** How many verified tokens a container remembers (a token is a few hundred bytes). */
const CACHE_SIZE = 1000;

/**
 * A token that verified once stays valid until its own `exp`: signature, issuer and audience cannot change. So a
 * container remembers verified tokens (bounded, oldest evicted first) and re-checks only the expiry on a hit. This
 * takes the RSA verification off the hot path of busy clients (a profile put it at ~11% of a read's CPU).
 */
export function createTokenVerifier(config: AuthConfig, now: () => number = Date.now): TokenVerifier {
  const jwksCache = new SimpleJwksCache({ fetcher });
  const verify = cached(createUncachedVerifier(config, jwksCache), config, now);
  const scope = config.TASK_SERVICE_CLIENTS_SCOPE ?? DEFAULT_TASK_SERVICE_CLIENTS_SCOPE;
  if (!scope) return { verify };
  // A cache of its own: a token accepted here is a service client's, never a principal of `verify`.
  const verifyServiceClient = cached(createServiceClientVerifier(config, scope, jwksCache), config, now);
  return { verify, verifyServiceClient };
}

function cached(
  inner: (token: string) => Promise<Principal>,
  config: AuthConfig,
  now: () => number,
): (token: string) => Promise<Principal> {
  const cache = new Map<string, { principal: Principal; expiresMs: number }>();
  const graceMs = config.AUTH_GRACE_SECONDS * 1000;
  return async (token) => {
    const hit = cache.get(token);
    if (hit) {
      if (now() < hit.expiresMs + graceMs) return hit.principal;
      cache.delete(token);
      throw new UnauthorizedError('Invalid or expired token');
    }
    const principal = await inner(token);
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
    cache.set(token, { principal, expiresMs: (principal.claims.exp as number) * 1000 });
    return principal;
  };
}

/**
 * The audience rule, exactly API Gateway's (HTTP API JWT authorizer): a token's `aud` must name one of the
 * audiences; only a token WITHOUT `aud` is judged by its `client_id` (Cognito access tokens carry no `aud`). When a
 * token carries both, `aud` alone decides and `client_id` is ignored, at the gateway and here, so no token is
 * accepted by one and refused by the other. An `aud` that is a list passes when any entry matches.
 */
export function audienceAllowed(
  payload: Readonly<Record<string, unknown>>,
  audiences: readonly string[],
): boolean {
  if (payload.aud !== undefined) {
    const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    return aud.some((a) => typeof a === 'string' && audiences.includes(a));
  }
  return typeof payload.client_id === 'string' && audiences.includes(payload.client_id);
}

const jwksUriOf = (config: AuthConfig) =>
  config.AUTH_JWKS_URI ?? `${config.AUTH_ISSUER.replace(/\/$/, '')}/.well-known/jwks.json`;

function createUncachedVerifier(
  config: AuthConfig,
  jwksCache: SimpleJwksCache,
): (token: string) => Promise<Principal> {
  const audiences = config.AUTH_AUDIENCE;
  // An empty list must never mean "any audience": that would accept tokens minted for other APIs.
  if (audiences.length === 0) throw new Error('Invalid configuration: AUTH_AUDIENCE names no audience');
  const verifier = JwtVerifier.create(
    {
      issuer: config.AUTH_ISSUER,
      jwksUri: jwksUriOf(config),
      // Audience is checked below by the gateway's rule, so that Cognito access tokens (client_id, no aud) pass.
      audience: null,
      graceSeconds: config.AUTH_GRACE_SECONDS,
      customJwtCheck: ({ payload }) => {
        if (!audienceAllowed(payload, audiences)) throw new Error('audience not allowed');
      },
    },
    { jwksCache },
  );
  const norm = (r: string) => (r.includes('/') ? r.slice(r.lastIndexOf('/') + 1) : r).toLowerCase();
  const admin = config.AUTH_ADMIN_ROLE.toLowerCase();
  const service = config.AUTH_SERVICE_ROLE.toLowerCase();
  return async (token) => {
    let payload: JwtPayload;
    try {
      payload = await verifier.verify(token);
    } catch {
      throw new UnauthorizedError('Invalid or expired token');
    }
    if (typeof payload.exp !== 'number') throw new UnauthorizedError('Token has no expiry');
    const roles = [...new Set(claimValues(payload, config.AUTH_ROLES_CLAIMS).map(norm))];
    const groups = [...new Set(claimValues(payload, config.AUTH_GROUPS_CLAIMS))];
    const sub = typeof payload.sub === 'string' ? payload.sub : null;
    return Object.freeze({
      kind: 'user',
      sub,
      clientId: typeof payload.client_id === 'string' && payload.client_id ? payload.client_id : sub,
      roles,
      groups,
      isAdmin: roles.includes(admin),
      isService: roles.includes(service),
      claims: payload as Record<string, unknown>,
    });
  };
}

/**
 * A task service's own app client (docs/security.md, one client per service: made by the coordinator at
 * registration, or by `drc services add --create-client`) cannot be in the audience list, which is fixed at deploy
 * time; so the gateway's audience rule refuses its tokens. On the routes that take one (PATCH /tasks/{id},
 * POST /events), its token is accepted instead when it is, all of:
 *
 * - signed by the same issuer's keys, from that issuer, not expired (as every token);
 * - a client-credentials access token: `token_use` is `access`, and it carries no `aud` (an `aud` decides by the
 *   audience rule alone, as at the gateway) and a `client_id`;
 * - granted `scope` (the task services' scope, TASK_SERVICE_CLIENTS_SCOPE), which in the pool only the clients made
 *   for task services (and the shared task-service client) are allowed.
 *
 * The principal is a service and nothing more (no admin, no study groups, whatever else its scopes say), and it may
 * only write about the task service bound to its client id (`boundClientOnly`).
 */
function createServiceClientVerifier(
  config: AuthConfig,
  scope: string,
  jwksCache: SimpleJwksCache,
): (token: string) => Promise<Principal> {
  const verifier = JwtVerifier.create(
    {
      issuer: config.AUTH_ISSUER,
      jwksUri: jwksUriOf(config),
      audience: null,
      scope,
      graceSeconds: config.AUTH_GRACE_SECONDS,
      customJwtCheck: ({ payload }) => {
        if (payload.aud !== undefined) throw new Error('a token with aud is judged by the audience rule');
        if (payload.token_use !== 'access') throw new Error('not an access token');
        if (typeof payload.client_id !== 'string' || !payload.client_id) throw new Error('no client_id');
      },
    },
    { jwksCache },
  );
  return async (token) => {
    let payload: JwtPayload;
    try {
      payload = await verifier.verify(token);
    } catch {
      throw new UnauthorizedError('Invalid or expired token');
    }
    if (typeof payload.exp !== 'number') throw new UnauthorizedError('Token has no expiry');
    return Object.freeze({
      kind: 'user',
      sub: typeof payload.sub === 'string' ? payload.sub : null,
      clientId: payload.client_id as string,
      roles: [config.AUTH_SERVICE_ROLE.toLowerCase()],
      groups: [],
      isAdmin: false,
      isService: true,
      boundClientOnly: true,
      claims: payload as Record<string, unknown>,
    });
  };
}

/** Extracts "Bearer <token>" from an Authorization header value; null when the scheme is something else. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : null;
}
