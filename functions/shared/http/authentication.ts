import { ANONYMOUS, bearerToken, type Principal, type TokenVerifier } from '../auth.js';
import { ForbiddenError, UnauthorizedError } from '../errors.js';
import type { Request, Route } from './router.js';

/**
 * The caller of a route, judged by the route's `access`: anonymous where no token is needed (or none is sent to an
 * `optional` route), else the verified token's principal, which `admin` and `service` routes also hold to a role.
 * A missing or refused token is a 401, a token without the role a 403.
 */
export async function authenticate(
  route: Pick<Route, 'access' | 'serviceClients'>,
  headers: Record<string, string>,
  verifier: TokenVerifier,
): Promise<Principal> {
  const { access } = route;
  if (access === 'public') return ANONYMOUS;
  const token = bearerToken(headers.authorization);
  if (!token) {
    if (access === 'optional') return ANONYMOUS;
    throw new UnauthorizedError();
  }
  const principal = await verifyFor(route, token, verifier);
  if (access === 'admin' && !principal.isAdmin) throw new ForbiddenError('Requires the admin role');
  if (access === 'service' && !principal.isAdmin && !principal.isService)
    throw new ForbiddenError('Requires the service or admin role');
  return principal;
}

/**
 * The token's principal. A route that takes task services' own app clients (`serviceClients`) tries that rule only
 * for a token the audience rule refused, so every token the audience rule accepts is judged by it alone.
 */
async function verifyFor(
  route: Pick<Route, 'serviceClients'>,
  token: string,
  verifier: TokenVerifier,
): Promise<Principal> {
  try {
    return await verifier.verify(token);
  } catch (err) {
    if (!route.serviceClients || !verifier.verifyServiceClient) throw err;
    return await verifier.verifyServiceClient(token).catch(() => {
      throw err;
    });
  }
}

/** The caller as the use cases judge writes: admin, or the identity its token acts as (auth.ts, clientId). */
export function actorOf(req: Pick<Request, 'principal'>): {
  isAdmin: boolean;
  identity: string | null;
  boundClientOnly?: boolean;
} {
  const { isAdmin, clientId, boundClientOnly } = req.principal;
  return { isAdmin, identity: clientId, ...(boundClientOnly ? { boundClientOnly } : {}) };
}
