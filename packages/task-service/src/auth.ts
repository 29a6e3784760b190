import { JwtVerifier } from 'aws-jwt-verify';
import { SimpleJwksCache } from 'aws-jwt-verify/jwk';
import { TASK_SERVICE_AUDIENCE, TASK_SERVICE_SCOPE } from './contract.js';
import { KitError } from './errors.js';

/**
 * Which tokens count as the coordinator's. The token must be one the coordinator got for the task services, not
 * merely any token of the identity provider: an admin's token, a user's, another service's, or one for the
 * coordinator's own APIs is refused (401), whatever roles it carries.
 *
 * - A token with `aud` (the local identity provider, most OIDC providers): `aud` must be one of `audience`
 *   (default `task-services`).
 * - A token without `aud` (a Cognito access token): its `scope` must include `scope` (default
 *   `task-services/invoke`) and its `client_id` must be one of `clientIds` (the coordinator's app client); without
 *   `clientIds` such tokens are refused.
 *
 * @example
 * ```ts
 * import type { TokenRules } from '@release-coordinator/task-service';
 *
 * // On Cognito: the coordinator's app client, with the task services' scope.
 * const rules: TokenRules = { scope: 'task-services/invoke', clientIds: ['4k1coordinatorclientid'] };
 * ```
 */
export interface TokenRules {
  /** The audiences a token with `aud` may name (default `task-services`). */
  audience?: string[];
  /** The scope a token without `aud` must carry (default `task-services/invoke`). */
  scope?: string;
  /** The coordinator's client ids, for a token without `aud`. */
  clientIds?: string[];
  /** A role the token must also carry (roles, cognito:groups or scope claims), else 403. */
  requiredRole?: string;
}

/**
 * How a service checks the coordinator's token: `jwks` verifies the JWT itself (its signature against the issuer's
 * JWKS, its issuer and expiry; `jwksUri` defaults to `{issuer}/.well-known/jwks.json`), `verify` asks the identity
 * provider's `{authUrl}/oauth/token/verify` (the local one has it; Cognito has none), `none` checks nothing (for
 * trials). Both checks then apply the TokenRules to the token's claims.
 *
 * @example
 * ```ts
 * import type { AuthOptions } from '@release-coordinator/task-service';
 *
 * const auth: AuthOptions = { mode: 'jwks', issuer: 'https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc' };
 * ```
 */
export type AuthOptions =
  | ({ mode: 'jwks'; issuer: string; jwksUri?: string } & TokenRules)
  | ({ mode: 'verify'; authUrl: string } & TokenRules)
  | { mode: 'none' };

/**
 * Checks an Authorization header: answers the token's claims (undefined when nothing is checked), or throws a
 * KitError (401 or 403).
 *
 * @example
 * ```ts
 * import { type CheckToken, tokenChecker } from '@release-coordinator/task-service';
 *
 * const check: CheckToken = tokenChecker({ mode: 'verify', authUrl: 'http://127.0.0.1:3002' });
 * const claims = await check(request.headers.authorization);
 * ```
 */
export type CheckToken = (authorization: string | undefined) => Promise<Record<string, unknown> | undefined>;

const words = (v: unknown): string[] =>
  Array.isArray(v) ? v.map(String) : typeof v === 'string' ? v.split(/[\s,]+/).filter(Boolean) : [];

/**
 * The claim checks of TokenRules, whoever verified the signature. Throws the KitError (401 or 403) the contract
 * gives.
 *
 * @example
 * ```ts
 * import { checkClaims } from '@release-coordinator/task-service';
 *
 * checkClaims({ aud: 'task-services', sub: 'coordinator' }, {}); // passes
 * checkClaims({ aud: 'coordinator-api' }, {}); // throws: the token is not for the task services
 * ```
 */
export function checkClaims(claims: Record<string, unknown>, rules: TokenRules): void {
  const audience = rules.audience?.length ? rules.audience : [TASK_SERVICE_AUDIENCE];
  if (claims.aud !== undefined) {
    const aud = words(claims.aud);
    if (!aud.some((a) => audience.includes(a)))
      throw new KitError(
        'unauthorized',
        `the token is not for the task services (aud ${aud.join(', ') || 'empty'})`,
      );
  } else {
    const scope = rules.scope ?? TASK_SERVICE_SCOPE;
    if (!words(claims.scope).includes(scope))
      throw new KitError('unauthorized', `the token has no aud and lacks the scope ${scope}`);
    if (!rules.clientIds?.includes(String(claims.client_id)))
      throw new KitError('unauthorized', 'the token has no aud and is not of the coordinator’s client');
  }
  if (rules.requiredRole) {
    const roles = [claims.roles, claims['cognito:groups'], claims.scope]
      .flatMap(words)
      .map((r) => r.split('/').pop());
    if (!roles.includes(rules.requiredRole))
      throw new KitError('forbidden', `the token lacks the ${rules.requiredRole} role`);
  }
}

function bearer(header: string | undefined): string {
  const m = /^Bearer\s+(\S+)$/i.exec(header ?? '');
  if (!m) throw new KitError('unauthorized', 'a bearer token is required');
  return m[1];
}

/**
 * The check of the coordinator's bearer token on every request, as `auth` says (AuthOptions). `verify` applies the
 * claim checks to the claims the endpoint answers, since the endpoint says only that the token is valid, not for
 * whom. `fetchImpl` fetches the JWKS or asks the endpoint.
 *
 * @example
 * ```ts
 * import { tokenChecker } from '@release-coordinator/task-service';
 *
 * const check = tokenChecker({ mode: 'jwks', issuer: 'http://127.0.0.1:3002' });
 * await check('Bearer eyJhbGciOiJSUzI1NiIs...'); // the claims, or a KitError
 * ```
 */
export function tokenChecker(auth: AuthOptions, fetchImpl: typeof fetch = fetch): CheckToken {
  if (auth.mode === 'none') return async () => undefined;
  if (auth.mode === 'verify') {
    const base = `${auth.authUrl.replace(/\/+$/, '')}/oauth/token/verify`;
    const audiences = auth.audience?.length ? auth.audience : [TASK_SERVICE_AUDIENCE];
    return async (header) => {
      const token = bearer(header);
      // The audience is named, so that the provider judges the token for it; its claims are then checked here too.
      for (const audience of audiences) {
        const res = await fetchImpl(`${base}?audience=${encodeURIComponent(audience)}`, {
          headers: { Authorization: `Bearer ${token}` },
          signal: AbortSignal.timeout(5000),
        }).catch(() => null);
        if (res?.status !== 200) {
          await res?.arrayBuffer();
          continue;
        }
        const body = (await res.json().catch(() => null)) as Record<string, unknown> | null;
        const claims = (body?.claims ?? body) as Record<string, unknown> | null;
        if (!claims || typeof claims !== 'object') break;
        checkClaims(claims, auth);
        return claims;
      }
      throw new KitError('unauthorized', 'the token did not verify');
    };
  }
  const verifier = JwtVerifier.create(
    {
      issuer: auth.issuer,
      // The audience is judged by checkClaims: a Cognito access token has none, and is judged by scope and client.
      audience: null,
      jwksUri: auth.jwksUri ?? `${auth.issuer.replace(/\/+$/, '')}/.well-known/jwks.json`,
    },
    {
      // The platform fetch, so that an http:// identity provider (the local one) works too.
      jwksCache: new SimpleJwksCache({
        fetcher: {
          fetch: async (uri: string) =>
            (await fetchImpl(uri, { signal: AbortSignal.timeout(5000) })).arrayBuffer(),
        },
      }),
    },
  );
  return async (header) => {
    const token = bearer(header);
    let claims: Record<string, unknown>;
    try {
      claims = (await verifier.verify(token)) as Record<string, unknown>;
    } catch (err) {
      throw new KitError('unauthorized', `invalid or expired token (${(err as Error).message})`);
    }
    checkClaims(claims, auth);
    return claims;
  };
}
