import { randomUUID } from 'node:crypto';
import { isoMicros, nowIso } from '../shared/clock.js';
import { NotFoundError, UnauthorizedError } from '../shared/errors.js';
import { isId } from '../shared/ids.js';
import { count, METRIC } from '../shared/metrics.js';
import { actorOf, type Caller, methodOf, requireStudyRead } from './access.js';
import { newAudit } from './audit.js';
import { developerCaller, devTokenExpired } from './dev-tokens.js';
import { type AuditMethod, type RequestInfo, servedContentType, type VersionRecord } from './model.js';
import type { FilesDeps } from './ports.js';
import { hashToken, newSignedToken, tokenKind } from './tokens.js';
import { downloadUrlSeconds } from './url-lifetime.js';
import { contentDisposition, downloadUrl } from './views.js';

/**
 * What a download request presented: a bearer JWT (already verified, possibly absent) or a token from `?token=` /
 * `Authorization: Token <t>`. The token's prefix says whether it is a developer token or a signed-URL token.
 */
export type Presented = { kind: 'caller'; caller: Caller } | { kind: 'token'; token: string };

export interface DownloadTarget {
  studyId: string;
  fileId: string;
  versionId?: string;
}

export type Delivery =
  | { kind: 'redirect'; location: string }
  | { kind: 'inline'; body: Uint8Array; contentType: string; contentDisposition: string };

interface Granted {
  method: AuditMethod;
  actor: string | null;
  devToken: string | null;
  /** The hash of the developer token that authenticated, so a signed URL it mints dies with it. */
  devTokenHash?: string | null;
  /** Undoes a signed-URL claim when the download fails before any byte left. */
  undo?: () => Promise<void>;
}

const INVALID_LINK = 'This download link is invalid, has expired or has already been used';

/** A developer token: known, not revoked, not expired (401), and covering the path's study (403). */
async function developer(deps: GrantDeps, token: string, studyId: string): Promise<Granted> {
  const { caller, hash } = await developerCaller(deps, token);
  requireStudyRead(caller, studyId);
  return { method: 'developer_token', actor: null, devToken: caller.name, devTokenHash: hash };
}

/**
 * Authenticates and authorizes a download, before anything about the file is looked up: an anonymous caller learns
 * nothing about which ids exist, and a member of other studies gets 403 even for an unknown file.
 */
/** What authorizing a download reads: developer tokens, signed-URL tokens and the clock. */
type GrantDeps = Pick<FilesDeps, 'devTokens' | 'signedTokens' | 'clock'>;

/**
 * `peek` (a HEAD) decides exactly as a download would, but reads a signed-URL token instead of claiming it: a HEAD
 * writes nothing, so a link previewer cannot spend a link.
 */
async function grant(
  deps: GrantDeps,
  presented: Presented,
  target: DownloadTarget,
  mode: 'claim' | 'peek' = 'claim',
): Promise<Granted> {
  if (presented.kind === 'caller') {
    requireStudyRead(presented.caller, target.studyId);
    return { method: methodOf(presented.caller), actor: actorOf(presented.caller), devToken: null };
  }
  const kind = tokenKind(presented.token);
  if (kind === 'developer') return developer(deps, presented.token, target.studyId);
  if (kind !== 'signed' || !target.versionId) throw new UnauthorizedError(INVALID_LINK);
  const hash = hashToken(presented.token);
  const claimId = randomUUID();
  const bound = { studyId: target.studyId, fileId: target.fileId, versionId: target.versionId };
  const claimed =
    mode === 'peek'
      ? await deps.signedTokens.peek(hash, bound, deps.clock.nowMs())
      : await deps.signedTokens.claim(hash, bound, deps.clock.nowMs(), claimId);
  if (!claimed) throw new UnauthorizedError(INVALID_LINK);
  // A link minted with a developer token works only while that token exists and has not expired (the claim stays
  // spent either way).
  if (claimed.dev_token_hash) {
    const minter = await deps.devTokens.findByHash(claimed.dev_token_hash);
    if (!minter || devTokenExpired(minter, deps.clock.nowMs())) throw new UnauthorizedError(INVALID_LINK);
  }
  return {
    method: 'signed_url',
    actor: claimed.created_by,
    devToken: claimed.dev_token,
    undo: mode === 'claim' ? () => deps.signedTokens.release(hash, claimId) : undefined,
  };
}

/** The version a download path names: that version if given, else the newest available one. */
export async function resolveVersion(
  deps: Pick<FilesDeps, 'files'>,
  target: DownloadTarget,
): Promise<VersionRecord> {
  // An id of the wrong shape names nothing (and must never reach a key lookup): the unknown-id 404.
  if (!isId('SF', target.fileId) || (target.versionId !== undefined && !isId('FV', target.versionId)))
    throw new NotFoundError(`No file ${target.fileId.slice(0, 64)} in study ${target.studyId.slice(0, 64)}`);
  if (target.versionId) {
    const v = await deps.files.getVersion(target.fileId, target.versionId);
    // A version of another file is simply not found under this file; a pending upload is not downloadable.
    if (!v || v.study_id !== target.studyId || v.state !== 'available')
      throw new NotFoundError(
        `No available version ${target.versionId} of file ${target.fileId} in study ${target.studyId}`,
      );
    return v;
  }
  // One read by key, whatever the number of versions: the file and its newest available version.
  const found = await deps.files.getFileWithLatest(target.fileId);
  if (!found || found.file.study_id !== target.studyId)
    throw new NotFoundError(`No file ${target.fileId} in study ${target.studyId}`);
  const latest = found.latest;
  if (!latest) throw new NotFoundError(`File ${target.fileId} has no available version yet`);
  return latest;
}

/**
 * A download. Small objects come back in the response; larger ones as a redirect to a presigned S3 GET that names
 * the file and lives long enough to fetch (and resume) it (url-lifetime.ts), so `curl -L` and browsers receive the
 * bytes straight from S3, where Range works.
 * Every successful download is audited before it is answered.
 */
export async function download(
  deps: GrantDeps & Pick<FilesDeps, 'files' | 'store' | 'audit' | 'config'>,
  presented: Presented,
  target: DownloadTarget,
  info: RequestInfo,
): Promise<Delivery> {
  const granted = await grant(deps, presented, target);
  try {
    const version = await resolveVersion(deps, target);
    const disposition = contentDisposition(version.file_name);
    let delivery: Delivery;
    if (version.size <= deps.config.DIRECT_DOWNLOAD_MAX_BYTES) {
      delivery = {
        kind: 'inline',
        body: await deps.store.read(version.key),
        contentType: servedContentType(version),
        contentDisposition: disposition,
      };
    } else {
      const signed = await deps.store.presignGet(version.key, {
        contentDisposition: disposition,
        contentType: servedContentType(version),
        expiresIn: downloadUrlSeconds(version.size, deps.config),
      });
      delivery = { kind: 'redirect', location: signed.url };
    }
    await deps.audit.record(
      newAudit(
        deps,
        {
          action: 'download',
          method: granted.method,
          actor: granted.actor,
          devToken: granted.devToken,
          studyId: version.study_id,
          fileId: version.file_id,
          versionId: version.id,
        },
        info,
      ),
    );
    count(METRIC.downloads, { Method: granted.method });
    if (granted.method === 'signed_url') count(METRIC.signedUrlsClaimed);
    return delivery;
  } catch (err) {
    await granted.undo?.().catch(() => undefined);
    throw err;
  }
}

/** What a HEAD of a download answers: the headers of the bytes a GET would deliver. */
export interface DownloadHeaders {
  contentType: string;
  contentDisposition: string;
}

/**
 * A HEAD of a download: the same authorization and lookups as a GET, and the headers of the bytes, with no side
 * effect. It claims no signed-URL token (it reads it), reads no object, signs no S3 URL (a HEAD is never a redirect:
 * a Location would be a download that no audit record names) and writes no audit record.
 */
export async function inspectDownload(
  deps: GrantDeps & Pick<FilesDeps, 'files'>,
  presented: Presented,
  target: DownloadTarget,
): Promise<DownloadHeaders> {
  await grant(deps, presented, target, 'peek');
  const version = await resolveVersion(deps, target);
  return {
    contentType: servedContentType(version),
    contentDisposition: contentDisposition(version.file_name),
  };
}

export interface SignedUrl {
  url: string;
  expires_at: string;
  version_id: string;
}

/**
 * Mints a single-use signed URL for a version (the newest available one when none is named). Same rules as a
 * download; a signed-URL token cannot mint another. The URL is absolute and pins the version.
 */
export async function mintSignedUrl(
  deps: GrantDeps & Pick<FilesDeps, 'files' | 'config'>,
  presented: Presented,
  target: DownloadTarget,
  baseUrl: string,
  info: RequestInfo,
): Promise<SignedUrl> {
  const { granted, version } = await mintable(deps, presented, target);
  const token = newSignedToken();
  const expiresMs = deps.clock.nowMs() + deps.config.SIGNED_URL_TTL_SECONDS * 1000;
  await deps.signedTokens.create(
    hashToken(token),
    {
      study_id: version.study_id,
      file_id: version.file_id,
      version_id: version.id,
      created_at: nowIso(deps.clock),
      created_by: granted.actor,
      dev_token: granted.devToken,
      dev_token_hash: granted.devTokenHash ?? null,
      expires_at_ms: expiresMs,
      claimed: false,
    },
    newAudit(
      deps,
      {
        action: 'signed_url.create',
        method: granted.method,
        actor: granted.actor,
        devToken: granted.devToken,
        studyId: version.study_id,
        fileId: version.file_id,
        versionId: version.id,
      },
      info,
    ),
  );
  return {
    url: `${downloadUrl(baseUrl, version.study_id, version.file_id, version.id)}?token=${token}`,
    expires_at: isoMicros(expiresMs),
    version_id: version.id,
  };
}

/** Who may mint, and which version a mint would pin: every check of a mint, none of its writes. */
async function mintable(
  deps: GrantDeps & Pick<FilesDeps, 'files'>,
  presented: Presented,
  target: DownloadTarget,
): Promise<{ granted: Granted; version: VersionRecord }> {
  if (presented.kind === 'token' && tokenKind(presented.token) !== 'developer')
    throw new UnauthorizedError('Only a bearer token or a developer token can create a signed URL');
  const granted = await grant(deps, presented, target, 'peek');
  return { granted, version: await resolveVersion(deps, target) };
}

/**
 * A HEAD of a signed-URL route: answers as the mint would (401, 403, 404 or 200) without minting, storing a token or
 * writing an audit record.
 */
export async function inspectSignedUrl(
  deps: GrantDeps & Pick<FilesDeps, 'files'>,
  presented: Presented,
  target: DownloadTarget,
): Promise<void> {
  await mintable(deps, presented, target);
}
