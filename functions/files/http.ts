import { bearerToken, type TokenVerifier } from '../shared/auth.js';
import type { Request } from '../shared/http/router.js';
import { callerOf } from './access.js';
import type { Presented } from './downloads.js';
import type { RequestInfo } from './model.js';
import { tokenKind } from './tokens.js';

/** Request plumbing the file-service handlers share. */

export function requestInfo(req: Request): RequestInfo {
  // API Gateway appends the address it saw to X-Forwarded-For; earlier entries come from the client and could be
  // forged, so the audit keeps the last one.
  const forwarded = req.headers['x-forwarded-for']?.split(',').at(-1)?.trim();
  return { sourceIp: forwarded || null, userAgent: req.headers['user-agent'] ?? null };
}

/**
 * The credential of a download-type request. `?token=` wins, then `Authorization: Token <t>`; otherwise the bearer
 * JWT that httpApp already verified (or nobody).
 */
export function presented(req: Request): Presented {
  const query = req.query.token;
  if (query !== undefined) return { kind: 'token', token: query };
  const header = /^Token\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  if (header) return { kind: 'token', token: header[1] };
  return { kind: 'caller', caller: callerOf(req.principal) };
}

/**
 * The credential of a route that authenticates itself (`public` for httpApp: DRS, the manifest): `?token=` or
 * `Authorization: Token` as on downloads, a developer token sent as `Bearer sfdt_…` (all that DRS clients and many
 * tools can send), or a bearer JWT, verified here.
 */
export async function credentialOf(req: Request, verifier: TokenVerifier): Promise<Presented> {
  const given = presented(req);
  if (given.kind === 'token') return given;
  const bearer = bearerToken(req.headers.authorization);
  if (!bearer) return given;
  if (tokenKind(bearer) === 'developer') return { kind: 'token', token: bearer };
  return { kind: 'caller', caller: callerOf(await verifier.verify(bearer)) };
}
