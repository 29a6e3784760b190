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
import {
  type FileRecord,
  type FileSummary,
  type RequestInfo,
  stagingKey,
  type VersionRecord,
} from './model.js';
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

/** A file as listings show it: its record, its state and its newest available version. */
export interface FileView {
  file: FileRecord;
  summary: FileSummary;
}

async function withSummaries(deps: Pick<FilesDeps, 'files'>, files: FileRecord[]): Promise<FileView[]> {
  const summaries = await deps.files.summaries(files.map((f) => f.id));
  return files.map((file, i) => ({ file, summary: summaries[i] }));
}

/** A page of a study's files, each with its state and newest available version. */
export async function describeStudyFiles(
  deps: Pick<FilesDeps, 'studies' | 'files'>,
  caller: Caller,
  studyId: string,
  page: Page,
): Promise<Listing<FileView>> {
  const listing = await listStudyFiles(deps, caller, studyId, page);
  return { count: listing.count, items: await withSummaries(deps, listing.items) };
}

/** One file with its state and newest available version (the same visibility rule as getFile). */
export async function describeFile(
  deps: Pick<FilesDeps, 'files'>,
  caller: Caller,
  fileId: string,
): Promise<FileView> {
  const [view] = await withSummaries(deps, [await getFile(deps, caller, fileId)]);
  return view;
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

/** Versions a file deletion reads at a time: each batch's objects go, then its records. */
const DELETE_BATCH = 100;
/** Batches in a row that may find a version changed under them (an upload confirmed meanwhile) before giving up. */
const STALE_BATCHES = 5;

/**
 * Deletes a file, every version and every object. The file is first marked so it takes no new version; then its
 * versions go a batch at a time, objects first, so no read holds more than DELETE_BATCH versions whatever the file
 * has; then the file itself.
 */
export async function deleteFile(
  deps: Pick<FilesDeps, 'files' | 'store' | 'clock'>,
  caller: Caller,
  fileId: string,
  info: RequestInfo,
): Promise<void> {
  requireAdmin(caller);
  if (!(await deps.files.beginDelete(fileId))) throw new NotFoundError(`No file ${fileId}`);
  const file = await deps.files.getFile(fileId);
  if (!file) throw new NotFoundError(`No file ${fileId}`);
  for (let stale = 0; ; ) {
    const batch = await deps.files.someVersions(fileId, DELETE_BATCH);
    if (batch.length === 0) break;
    await removeObjects(deps, batch);
    if (await deps.files.deleteVersions(fileId, batch)) continue;
    if (++stale === STALE_BATCHES)
      throw new Error('Versions kept changing while their file was being deleted');
  }
  await deps.files.deleteFile(
    file,
    newAudit(
      deps,
      {
        action: 'file.delete',
        method: methodOf(caller),
        actor: actorOf(caller),
        studyId: file.study_id,
        fileId,
      },
      info,
    ),
  );
}
