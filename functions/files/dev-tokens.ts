import { type Clock, isoMicros } from '../shared/clock.js';
import { ConflictError, NotFoundError, UnauthorizedError, ValidationError } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import { actorOf, type Caller, requireAdmin } from './access.js';
import { newAudit } from './audit.js';
import type { DevTokenRecord, RequestInfo } from './model.js';
import type { DevTokenRepository, FilesDeps, Listing } from './ports.js';
import { hashToken, hintOf, newDevToken } from './tokens.js';

/**
 * Developer download tokens: admins only. The secret is returned once, at creation; only its hash is stored, so
 * neither a listing nor a database dump can reveal it. Deleting a token revokes it at once (lookups are consistent
 * reads). A token may be narrowed at creation: an expiry (none by default, as the download contract's tokens), and
 * a list of studies (every study by default); both are checked wherever a developer token is accepted.
 */
export interface NewDevToken {
  name: string;
  /** Epoch milliseconds after which the token is refused; null or absent: never. */
  expiresAtMs?: number | null;
  /** The only studies the token reaches; null or absent: every study. */
  studies?: readonly string[] | null;
}

export async function createDevToken(
  deps: Pick<FilesDeps, 'devTokens' | 'clock'>,
  caller: Caller,
  input: NewDevToken,
  info: RequestInfo,
): Promise<{ record: DevTokenRecord; secret: string }> {
  requireAdmin(caller);
  const { name } = input;
  const nowMs = deps.clock.nowMs();
  if (input.expiresAtMs != null && input.expiresAtMs <= nowMs)
    throw ValidationError.field('expires_at', 'must be in the future');
  const secret = newDevToken();
  const record: DevTokenRecord = {
    name,
    hint: hintOf(secret),
    created_at: isoMicros(nowMs),
    created_by: actorOf(caller),
    expires_at: input.expiresAtMs == null ? null : isoMicros(input.expiresAtMs),
    studies: input.studies ? [...new Set(input.studies)] : null,
  };
  const audit = newAudit(
    deps,
    { action: 'dev_token.create', method: 'bearer', actor: actorOf(caller), devToken: name },
    info,
  );
  if (!(await deps.devTokens.create(hashToken(secret), record, audit)))
    throw new ConflictError(`A developer token named "${name}" already exists`);
  return { record, secret };
}

/** Whether a token has expired at `nowMs`. */
export function devTokenExpired(t: Pick<DevTokenRecord, 'expires_at'>, nowMs: number): boolean {
  return t.expires_at !== null && Date.parse(t.expires_at) <= nowMs;
}

/**
 * The caller a presented developer token stands for: its name and the studies it covers. Unknown, revoked and
 * expired tokens are all a 401. One consistent read.
 */
export async function developerCaller(
  deps: { devTokens: Pick<DevTokenRepository, 'findByHash'>; clock: Clock },
  token: string,
): Promise<{ caller: Extract<Caller, { kind: 'developer' }>; hash: string }> {
  const hash = hashToken(token);
  const record = await deps.devTokens.findByHash(hash);
  if (!record) throw new UnauthorizedError('Unknown or revoked developer token');
  if (devTokenExpired(record, deps.clock.nowMs()))
    throw new UnauthorizedError('This developer token has expired');
  return { caller: { kind: 'developer', name: record.name, studies: record.studies }, hash };
}

export async function listDevTokens(
  deps: Pick<FilesDeps, 'devTokens' | 'clock'>,
  caller: Caller,
  page: Page,
): Promise<Listing<DevTokenRecord>> {
  requireAdmin(caller);
  return deps.devTokens.list(page);
}

export async function deleteDevToken(
  deps: Pick<FilesDeps, 'devTokens' | 'clock'>,
  caller: Caller,
  name: string,
  info: RequestInfo,
): Promise<void> {
  requireAdmin(caller);
  const deleted = await deps.devTokens.delete(name, () =>
    newAudit(
      deps,
      { action: 'dev_token.delete', method: 'bearer', actor: actorOf(caller), devToken: name },
      info,
    ),
  );
  if (!deleted) throw new NotFoundError(`No developer token named "${name}"`);
}
