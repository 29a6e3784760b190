import { nowIso } from '../shared/clock.js';
import { ConflictError, NotFoundError } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import { actorOf, type Caller, requireAdmin } from './access.js';
import { newAudit } from './audit.js';
import type { DevTokenRecord, RequestInfo } from './model.js';
import type { FilesDeps, Listing } from './ports.js';
import { hashToken, hintOf, newDevToken } from './tokens.js';

/**
 * Developer download tokens: admins only. The secret is returned once, at creation; only its hash is stored, so
 * neither a listing nor a database dump can reveal it. Deleting a token revokes it at once (lookups are consistent
 * reads).
 */
export async function createDevToken(
  deps: Pick<FilesDeps, 'devTokens' | 'clock'>,
  caller: Caller,
  name: string,
  info: RequestInfo,
): Promise<{ record: DevTokenRecord; secret: string }> {
  requireAdmin(caller);
  const secret = newDevToken();
  const record: DevTokenRecord = {
    name,
    hint: hintOf(secret),
    created_at: nowIso(deps.clock),
    created_by: actorOf(caller),
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
