import { type Clock, isoMicros } from '../shared/clock.js';
import { mapLimit } from '../shared/concurrency.js';
import { AppError, isAppError, NotFoundError, UnauthorizedError } from '../shared/errors.js';
import { isId } from '../shared/ids.js';
import { log } from '../shared/log.js';
import { count, METRIC } from '../shared/metrics.js';
import { readableStack } from '../shared/stack-trace.js';
import { actorOf, type Caller, requireAuthenticated, requireVisible } from './access.js';
import { newAudit } from './audit.js';
import { developerCaller } from './dev-tokens.js';
import type { Presented } from './downloads.js';
import type { DrsConfig } from './drs-config.js';
import type { BulkOutcome, DrsContext, Resolved } from './drs-model.js';
import { authorizations, type DrsObjectJson, drsObjectJson, HTTPS_ACCESS_ID } from './drs-views.js';
import { type FileRecord, type RequestInfo, servedContentType, type VersionRecord } from './model.js';
import type { DevTokenRepository, FilesDeps } from './ports.js';
import { tokenKind } from './tokens.js';
import { downloadUrlSeconds, type UrlLifetimeConfig } from './url-lifetime.js';
import { contentDisposition } from './views.js';

/**
 * GA4GH DRS 1.5 over the file service's own records (docs/drs.md). A DRS object is one available file version: its
 * id is the version id (`FV_…`), which always names the same bytes. A file id (`SF_…`) is accepted too and names the
 * file's newest available version, so what it resolves to changes when a newer version is confirmed.
 *
 * Authorization is the downloads': a bearer JWT (admin: everything; member: the studies in its groups) or a
 * developer token (every study), checked before anything is looked up; anonymous callers get 401. Because a DRS id
 * does not name its study, membership can only be checked after the lookup, and a caller who may not read an object
 * gets exactly the answer an unknown id gets (404), so nobody learns which ids exist outside their studies.
 */

/** Lookups a bulk request runs at the same time. */
const BULK_CONCURRENCY = 16;

export type DrsDeps = Pick<FilesDeps, 'files' | 'devTokens' | 'store' | 'audit' | 'clock'> & {
  config: UrlLifetimeConfig;
  drs: DrsConfig;
};

/** A bulk request longer than maxBulkRequestLength. */
export class BulkRequestTooLargeError extends AppError {
  override name = 'BulkRequestTooLargeError';
  constructor(length: number, max: number) {
    super(413, 'request_too_large', `The bulk request names ${length} items; at most ${max} are accepted`);
  }
}

/** What an unknown id, an unavailable version and an object of another study all answer: nothing to tell apart. */
const notFound = (objectId: string) => new NotFoundError(`No DRS object ${objectId}`);

/**
 * Who is calling. A developer token (`Authorization: Token …`, `?token=` or `Bearer sfdt_…`) must exist and not be
 * revoked; any other token was verified as a JWT before. Signed-URL tokens are bound to one download path and mean
 * nothing here. Passports are not supported: a request that carries only passports is anonymous, so 401.
 */
export async function authenticate(
  deps: { devTokens: Pick<DevTokenRepository, 'findByHash'>; clock: Clock },
  presented: Presented,
  opts: { passports?: boolean } = {},
): Promise<Caller> {
  let caller: Caller;
  if (presented.kind === 'token') {
    if (tokenKind(presented.token) !== 'developer')
      throw new UnauthorizedError('Only bearer tokens and developer tokens are accepted here');
    // Known, not revoked, not expired; the studies it covers are checked on each object (requireVisible).
    caller = (await developerCaller(deps, presented.token)).caller;
  } else caller = presented.caller;
  if (caller.kind === 'anonymous' && opts.passports)
    throw new UnauthorizedError('GA4GH Passports are not supported; send a bearer token instead');
  requireAuthenticated(caller);
  return caller;
}

/**
 * The service's own id behind an object id: the id itself, or the `<id>` of a hostname-based `drs://<host>/<id>`
 * URI whose host is this service's. Null when the URI names another host.
 */
export function localObjectId(objectId: string, host: string): string | null {
  const m = /^drs:\/\/([^/]+)\/(.+)$/i.exec(objectId);
  if (!m) return objectId;
  if (m[1].toLowerCase() !== host.toLowerCase()) return null;
  try {
    return decodeURIComponent(m[2]);
  } catch {
    return null;
  }
}

/** True when the id could name an object of this service at all (before anything is read). */
export function isObjectIdShape(objectId: string, host: string): boolean {
  const id = localObjectId(objectId, host);
  return id !== null && (isId('FV', id) || isId('SF', id));
}

/** The available version an object id names, if the caller may read it. */
export async function resolveObject(
  deps: Pick<DrsDeps, 'files'>,
  caller: Caller,
  objectId: string,
  ctx: DrsContext,
): Promise<Resolved> {
  const id = localObjectId(objectId, ctx.host);
  let file: FileRecord | null = null;
  let version: VersionRecord | null = null;
  if (id !== null && isId('FV', id)) {
    // Two reads of constant size, whatever the number of versions the file has.
    const fileId = await deps.files.fileIdOfVersion(id);
    if (fileId)
      [file, version] = await Promise.all([deps.files.getFile(fileId), deps.files.getVersion(fileId, id)]);
  } else if (id !== null && isId('SF', id)) {
    // The file and its newest available version: one read by key, whatever the number of versions.
    const found = await deps.files.getFileWithLatest(id);
    file = found?.file ?? null;
    version = found?.latest ?? null;
  }
  // Only an available version is an object: pending, verifying or failed uploads have no bytes to serve.
  if (!file || !version || version.state !== 'available') throw notFound(objectId);
  // The downloads' own rule (access.ts): an object of a study the caller may not read is an unknown id.
  requireVisible(caller, version.study_id, () => notFound(objectId));
  return { file, version };
}

/** GET/POST /objects/{object_id}. */
export async function getObject(
  deps: Pick<DrsDeps, 'files'>,
  caller: Caller,
  objectId: string,
  ctx: DrsContext,
): Promise<DrsObjectJson> {
  return drsObjectJson(await resolveObject(deps, caller, objectId, ctx), ctx);
}

/** An access URL: a presigned S3 GET, and when it stops working (DRS's AccessURL plus `expires_at`). */
export interface AccessUrl {
  url: string;
  expires_at: string;
}

/**
 * A presigned S3 GET for a resolved object, needing no header, that lives long enough to fetch the object
 * (url-lifetime.ts) from the service's clock on. Audited (method `drs`) before it is handed out, as every download is.
 */
async function mintAccessUrl(
  deps: DrsDeps,
  caller: Caller,
  { version }: Resolved,
  info: RequestInfo,
): Promise<AccessUrl> {
  const signed = await deps.store.presignGet(version.key, {
    contentDisposition: contentDisposition(version.file_name),
    contentType: servedContentType(version),
    expiresIn: downloadUrlSeconds(version.size, deps.config),
    signedAtMs: deps.clock.nowMs(),
  });
  await deps.audit.record(
    newAudit(
      deps,
      {
        action: 'download',
        method: 'drs',
        actor: actorOf(caller),
        devToken: caller.kind === 'developer' ? caller.name : null,
        studyId: version.study_id,
        fileId: version.file_id,
        versionId: version.id,
      },
      info,
    ),
  );
  count(METRIC.downloads, { Method: 'drs' });
  return { url: signed.url, expires_at: isoMicros(signed.expiresAtMs) };
}

/** GET/POST /objects/{object_id}/access/{access_id}: an AccessURL (no header is needed) and its expiry. */
export async function getAccessUrl(
  deps: DrsDeps,
  caller: Caller,
  objectId: string,
  accessId: string,
  ctx: DrsContext,
  info: RequestInfo,
): Promise<AccessUrl> {
  const resolved = await resolveObject(deps, caller, objectId, ctx);
  if (accessId !== HTTPS_ACCESS_ID)
    throw new NotFoundError(`DRS object ${objectId} has no access method ${accessId}`);
  return mintAccessUrl(deps, caller, resolved, info);
}

/** The status code a failed item of a bulk request is reported with; unexpected failures are logged, not shown. */
function statusOf(err: unknown): number {
  if (isAppError(err)) return err.status;
  log.error('bulk DRS item failed', { error: readableStack(err) });
  return 500;
}

/** Runs one lookup per item; each failure lands in `unresolved` with its status code instead of failing the lot. */
async function bulk<I, T>(
  items: readonly I[],
  idOf: (item: I) => string,
  run: (item: I) => Promise<T>,
): Promise<BulkOutcome<T>> {
  const results = await mapLimit(items, BULK_CONCURRENCY, async (item) => {
    try {
      return { ok: true as const, value: await run(item) };
    } catch (err) {
      return { ok: false as const, status: statusOf(err), id: idOf(item) };
    }
  });
  const resolved: T[] = [];
  const failed = new Map<number, string[]>();
  for (const r of results) {
    if (r.ok) resolved.push(r.value);
    else failed.set(r.status, [...(failed.get(r.status) ?? []), r.id]);
  }
  const unresolved = [...failed].map(([error_code, object_ids]) => ({ error_code, object_ids }));
  const unresolvedCount = items.length - resolved.length;
  return {
    summary: { requested: items.length, resolved: resolved.length, unresolved: unresolvedCount },
    resolved,
    unresolved,
  };
}

function checkBulkLength(deps: Pick<DrsDeps, 'drs'>, length: number): void {
  const max = deps.drs.DRS_MAX_BULK_REQUEST_LENGTH;
  if (length > max) throw new BulkRequestTooLargeError(length, max);
}

/** Each id once, in the order first given: a repeated id is one object. */
const distinct = (ids: readonly string[]) => [...new Set(ids)];

/** POST /objects: `bulk_object_ids`, up to maxBulkRequestLength. */
export async function bulkObjects(
  deps: Pick<DrsDeps, 'files' | 'drs'>,
  caller: Caller,
  objectIds: readonly string[],
  ctx: DrsContext,
): Promise<BulkOutcome<DrsObjectJson>> {
  checkBulkLength(deps, objectIds.length);
  return bulk(
    distinct(objectIds),
    (id) => id,
    (id) => getObject(deps, caller, id, ctx),
  );
}

export interface BulkAccessItem {
  bulk_object_id: string;
  /** Omitted or empty: every access method of the object (there is one, `https`). */
  bulk_access_ids?: string[];
}

export interface BulkAccessUrl extends AccessUrl {
  drs_object_id: string;
  drs_access_id: string;
}

/**
 * POST /objects/access: one access URL per (object, access id) pair, up to maxBulkRequestLength pairs. Every URL
 * handed out is audited. A pair that fails reports its object id in `unresolved`.
 */
export async function bulkAccessUrls(
  deps: DrsDeps,
  caller: Caller,
  items: readonly BulkAccessItem[],
  ctx: DrsContext,
  info: RequestInfo,
): Promise<BulkOutcome<BulkAccessUrl>> {
  const pairs = items.flatMap((item) =>
    (item.bulk_access_ids?.length ? item.bulk_access_ids : [HTTPS_ACCESS_ID]).map((accessId) => ({
      objectId: item.bulk_object_id,
      accessId,
    })),
  );
  checkBulkLength(deps, Math.max(items.length, pairs.length));
  const unique = [...new Map(pairs.map((p) => [`${p.objectId}\n${p.accessId}`, p])).values()];
  return bulk(
    unique,
    (p) => p.objectId,
    async (p) => {
      const access = await getAccessUrl(deps, caller, p.objectId, p.accessId, ctx, info);
      return { drs_object_id: p.objectId, drs_access_id: p.accessId, ...access };
    },
  );
}

/**
 * OPTIONS /objects: the authorizations of each id. Nothing is looked up (they are the same for every object, and
 * OPTIONS needs no token), so an id is unresolved only when it cannot name an object of this service at all.
 */
export function bulkAuthorizations(
  deps: Pick<DrsDeps, 'drs'>,
  objectIds: readonly string[],
  ctx: DrsContext,
) {
  checkBulkLength(deps, objectIds.length);
  const ids = distinct(objectIds);
  const good = ids.filter((id) => isObjectIdShape(id, ctx.host));
  const bad = ids.filter((id) => !isObjectIdShape(id, ctx.host));
  return {
    summary: { requested: ids.length, resolved: good.length, unresolved: bad.length },
    resolved: good.map((id) => ({ drs_object_id: id, ...authorizations(ctx) })),
    unresolved: bad.length ? [{ error_code: 404, object_ids: bad }] : [],
  };
}

/** GET /service-info: GA4GH service-info with the DRS extension; the object count comes from counters. */
export async function serviceInfo(deps: Pick<DrsDeps, 'files' | 'drs'>) {
  const { drs } = deps;
  const totals = await deps.files.availableTotals();
  const stats = { objectCount: Math.max(0, totals.versions), totalObjectSize: Math.max(0, totals.bytes) };
  return {
    id: drs.DRS_SERVICE_ID,
    name: drs.DRS_SERVICE_NAME,
    type: { group: 'org.ga4gh', artifact: 'drs', version: '1.5.0' },
    description: drs.DRS_SERVICE_DESCRIPTION,
    organization: { name: drs.DRS_ORGANIZATION_NAME, url: drs.DRS_ORGANIZATION_URL },
    ...(drs.DRS_CONTACT_URL ? { contactUrl: drs.DRS_CONTACT_URL } : {}),
    ...(drs.DRS_DOCUMENTATION_URL ? { documentationUrl: drs.DRS_DOCUMENTATION_URL } : {}),
    ...(drs.DRS_ENVIRONMENT ? { environment: drs.DRS_ENVIRONMENT } : {}),
    version: drs.DRS_SERVICE_VERSION,
    // Required at the top level by DRS 1.5's schema (deprecated there, moving under `drs` in 2.0): both are given.
    maxBulkRequestLength: drs.DRS_MAX_BULK_REQUEST_LENGTH,
    drs: {
      maxBulkRequestLength: drs.DRS_MAX_BULK_REQUEST_LENGTH,
      ...stats,
      // The specification's own example nests the counts under `stats`; clients written from it find them there.
      stats,
    },
  };
}
