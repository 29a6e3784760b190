import { NotFoundError } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import { log } from '../shared/log.js';
import {
  actorOf,
  type Caller,
  methodOf,
  requireAdmin,
  requireAuthenticated,
  requireStudyRead,
  requireVisible,
} from './access.js';
import { newAudit } from './audit.js';
import { type FileRecord, type RequestInfo, stagingKey, type VersionRecord } from './model.js';
import type { FilesDeps, Listing } from './ports.js';

/** Files of one study, newest first. Membership is checked before the study is even looked up. */
export async function listStudyFiles(
  deps: Pick<FilesDeps, 'studies' | 'files'>,
  caller: Caller,
  studyId: string,
  page: Page,
): Promise<Listing<FileRecord>> {
  requireStudyRead(caller, studyId);
  const [exists, listing] = await Promise.all([
    deps.studies.exists(studyId),
    deps.files.listFiles(studyId, page),
  ]);
  if (!exists && listing.count === 0) throw new NotFoundError(`No study ${studyId}`);
  return listing;
}

/**
 * A file record; its study is only known after the lookup. A caller who may not read that study gets exactly the
 * 404 of an unknown id, so file ids of other studies cannot be probed.
 */
export async function getFile(
  deps: Pick<FilesDeps, 'files'>,
  caller: Caller,
  fileId: string,
): Promise<FileRecord> {
  requireAuthenticated(caller);
  const notFound = () => new NotFoundError(`No file ${fileId}`);
  const file = await deps.files.getFile(fileId);
  if (!file) throw notFound();
  requireVisible(caller, file.study_id, notFound);
  return file;
}

export async function listVersions(
  deps: Pick<FilesDeps, 'files'>,
  caller: Caller,
  fileId: string,
  page: Page,
): Promise<Listing<VersionRecord>> {
  await getFile(deps, caller, fileId);
  return deps.files.listVersions(fileId, page);
}

export async function getVersion(
  deps: Pick<FilesDeps, 'files'>,
  caller: Caller,
  fileId: string,
  versionId: string,
): Promise<VersionRecord> {
  requireAuthenticated(caller);
  const notFound = () => new NotFoundError(`No version ${versionId} of file ${fileId}`);
  const version = await deps.files.getVersion(fileId, versionId);
  if (!version) throw notFound();
  requireVisible(caller, version.study_id, notFound);
  return version;
}

/** The newest available version, or null when none has been confirmed yet. */
export function latestAvailable(versions: VersionRecord[]): VersionRecord | null {
  let best: VersionRecord | null = null;
  for (const v of versions) {
    if (v.state !== 'available') continue;
    if (!best || v.created_at > best.created_at || (v.created_at === best.created_at && v.id > best.id))
      best = v;
  }
  return best;
}

/** Aborting an open multipart upload is best effort: the bucket's lifecycle rule aborts any that remain. */
export async function abortQuietly(deps: Pick<FilesDeps, 'store'>, v: VersionRecord): Promise<void> {
  if (!v.multipart) return;
  try {
    await deps.store.abortMultipart(v.key, v.multipart.upload_id);
  } catch (err) {
    log.warn('could not abort a multipart upload', { key: v.key, error: (err as Error).message });
  }
}

async function removeObjects(deps: Pick<FilesDeps, 'store'>, versions: VersionRecord[]): Promise<void> {
  for (const v of versions) await abortQuietly(deps, v);
  // A single PUT's staging object too, if it was never confirmed (or a PUT came after the confirmation).
  await deps.store.delete(versions.flatMap((v) => [v.key, stagingKey(v.key)]));
}

/**
 * Deletes a version and its object. The object goes first: if S3 fails, the record stays and the delete can be
 * repeated, so no object is ever left without a record pointing at it.
 */
export async function deleteVersion(
  deps: Pick<FilesDeps, 'files' | 'store' | 'clock'>,
  caller: Caller,
  fileId: string,
  versionId: string,
  info: RequestInfo,
): Promise<void> {
  requireAdmin(caller);
  const version = await deps.files.getVersion(fileId, versionId);
  if (!version) throw new NotFoundError(`No version ${versionId} of file ${fileId}`);
  await removeObjects(deps, [version]);
  await deps.files.deleteVersion(
    version,
    newAudit(
      deps,
      {
        action: 'version.delete',
        method: methodOf(caller),
        actor: actorOf(caller),
        studyId: version.study_id,
        fileId,
        versionId,
      },
      info,
    ),
  );
}

/**
 * Deletes a file, every version and every object. The file is first marked so it takes no new version, then the
 * objects go, then the records.
 */
export async function deleteFile(
  deps: Pick<FilesDeps, 'files' | 'store' | 'clock'>,
  caller: Caller,
  fileId: string,
  info: RequestInfo,
): Promise<void> {
  requireAdmin(caller);
  if (!(await deps.files.beginDelete(fileId))) throw new NotFoundError(`No file ${fileId}`);
  const found = await deps.files.getFileWithVersions(fileId);
  if (!found) throw new NotFoundError(`No file ${fileId}`);
  await removeObjects(deps, found.versions);
  await deps.files.deleteFile(
    found.file,
    found.versions,
    newAudit(
      deps,
      {
        action: 'file.delete',
        method: methodOf(caller),
        actor: actorOf(caller),
        studyId: found.file.study_id,
        fileId,
      },
      info,
    ),
  );
}
