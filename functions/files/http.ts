import type { Request } from '../shared/http/router.js';
import { callerOf } from './access.js';
import type { Presented } from './downloads.js';
import type { RequestInfo } from './model.js';

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
