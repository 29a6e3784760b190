import { isoMicros, nowIso } from '../shared/clock.js';
import { AppError, ConflictError, hasCode, NotFoundError, ValidationError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import {
  actorOf,
  type Caller,
  methodOf,
  requireAuthenticated,
  requireStudyWrite,
  requireWritable,
} from './access.js';
import { newAudit } from './audit.js';
import { abortQuietly } from './catalog.js';
import type { FilesConfig } from './config.js';
import type { FileRecord, RequestInfo, VersionRecord } from './model.js';
import { MAX_PARTS } from './model.js';
import type { FilesDeps, UploadVerification } from './ports.js';

/** What uploads touch: the file records, the object store, the study directory, settings and the clock. */
type UploadDeps = Pick<FilesDeps, 'config' | 'clock' | 'store' | 'studies' | 'files'>;
/** Confirming also hands multipart uploads to the verification worker. */
export type ConfirmDeps = UploadDeps & { verification: UploadVerification };

const MiB = 1024 * 1024;
/** Part URLs handed out per response; more come from the upload-urls route, signed when they are needed. */
export const PART_URLS_PER_RESPONSE = 100;
const ID_ATTEMPTS = 5;

/** The uploaded object did not match what the uploader declared. */
export class UploadMismatchError extends AppError {
  override name = 'UploadMismatchError';
  constructor(message: string) {
    super(422, 'upload_mismatch', message);
  }
}

export interface NewUpload {
  file_name: string;
  size: number;
  /** Hex SHA-256 of the whole object. */
  sha256: string;
  content_type?: string;
}

export type UploadInstructions =
  | { type: 'single'; method: 'PUT'; url: string; expires_at: string }
  | {
      type: 'multipart';
      method: 'PUT';
      upload_id: string;
      part_size: number;
      part_count: number;
      /** The first parts' URLs; ask POST .../upload-urls for the others. */
      parts: { part_number: number; url: string }[];
      expires_at: string;
    };

export interface UploadStarted {
  file: FileRecord;
  version: VersionRecord;
  upload: UploadInstructions;
}

/** Single PUT up to the threshold; above it, parts of at least the configured size and never more than 10,000. */
export function uploadPlan(
  size: number,
  config: FilesConfig,
): { partSize: number; partCount: number } | null {
  if (size <= config.MULTIPART_THRESHOLD_BYTES) return null;
  const minimum = Math.ceil(Math.ceil(size / MAX_PARTS) / MiB) * MiB;
  const partSize = Math.max(config.MULTIPART_PART_SIZE_BYTES, minimum);
  return { partSize, partCount: Math.ceil(size / partSize) };
}

export function objectKey(studyId: string, fileId: string, versionId: string): string {
  return `studies/${studyId}/files/${fileId}/versions/${versionId}`;
}

const hexToBase64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64');

function checkSize(config: FilesConfig, size: number): void {
  if (size > config.FILE_MAX_BYTES)
    throw ValidationError.field('size', `must be at most ${config.FILE_MAX_BYTES} bytes`);
}

async function newVersion(
  deps: UploadDeps,
  caller: Caller,
  ids: { studyId: string; fileId: string; versionId: string },
  input: NewUpload,
): Promise<VersionRecord> {
  const plan = uploadPlan(input.size, deps.config);
  const key = objectKey(ids.studyId, ids.fileId, ids.versionId);
  const contentType = input.content_type ?? 'application/octet-stream';
  const uploadId = plan ? await deps.store.startMultipart(key, contentType) : null;
  return {
    id: ids.versionId,
    file_id: ids.fileId,
    study_id: ids.studyId,
    key,
    file_name: input.file_name,
    size: input.size,
    content_type: contentType,
    sha256: input.sha256.toLowerCase(),
    state: 'pending',
    created_at: nowIso(deps.clock),
    created_by: actorOf(caller),
    confirmed_at: null,
    multipart:
      plan && uploadId ? { upload_id: uploadId, part_size: plan.partSize, part_count: plan.partCount } : null,
  };
}

async function instructions(deps: UploadDeps, v: VersionRecord): Promise<UploadInstructions> {
  const ttl = deps.config.UPLOAD_URL_TTL_SECONDS;
  const expires_at = isoMicros(deps.clock.nowMs() + ttl * 1000);
  if (!v.multipart) {
    return {
      type: 'single',
      method: 'PUT',
      url: await deps.store.presignPut(v.key, hexToBase64(v.sha256), ttl),
      expires_at,
    };
  }
  const count = Math.min(v.multipart.part_count, PART_URLS_PER_RESPONSE);
  const parts = await Promise.all(
    Array.from({ length: count }, async (_, i) => ({
      part_number: i + 1,
      url: await deps.store.presignPart(v.key, v.multipart!.upload_id, i + 1, ttl),
    })),
  );
  return {
    type: 'multipart',
    method: 'PUT',
    upload_id: v.multipart.upload_id,
    part_size: v.multipart.part_size,
    part_count: v.multipart.part_count,
    parts,
    expires_at,
  };
}

/** A new file in a study, with its first version pending until the upload is confirmed. */
export async function createFile(
  deps: UploadDeps,
  caller: Caller,
  studyId: string,
  input: NewUpload & { name?: string; description?: string | null },
  info: RequestInfo,
): Promise<UploadStarted> {
  requireStudyWrite(caller, studyId);
  checkSize(deps.config, input.size);
  if (!(await deps.studies.exists(studyId))) throw new NotFoundError(`No study ${studyId}`);
  for (let attempt = 0; attempt < ID_ATTEMPTS; attempt++) {
    const fileId = newId('SF');
    const version = await newVersion(deps, caller, { studyId, fileId, versionId: newId('FV') }, input);
    const file: FileRecord = {
      id: fileId,
      study_id: studyId,
      name: input.name ?? input.file_name,
      description: input.description ?? null,
      created_at: version.created_at,
      created_by: actorOf(caller),
    };
    const audit = newAudit(
      deps,
      {
        action: 'upload.create',
        method: methodOf(caller),
        actor: actorOf(caller),
        studyId,
        fileId,
        versionId: version.id,
      },
      info,
    );
    const outcome = await deps.files.createFile(file, version, audit);
    if (outcome === 'created') return { file, version, upload: await instructions(deps, version) };
    await abortQuietly(deps, version);
  }
  throw new Error('Could not find a free file id');
}

/** A new version of an existing file. */
export async function createVersion(
  deps: UploadDeps,
  caller: Caller,
  fileId: string,
  input: NewUpload,
  info: RequestInfo,
): Promise<UploadStarted> {
  requireAuthenticated(caller);
  const notFound = () => new NotFoundError(`No file ${fileId}`);
  const file = await deps.files.getFile(fileId);
  if (!file) throw notFound();
  // The study is known only now: a file of a study the caller may not upload to is an unknown id to them.
  requireWritable(caller, file.study_id, notFound);
  checkSize(deps.config, input.size);
  for (let attempt = 0; attempt < ID_ATTEMPTS; attempt++) {
    const version = await newVersion(
      deps,
      caller,
      { studyId: file.study_id, fileId, versionId: newId('FV') },
      input,
    );
    const audit = newAudit(
      deps,
      {
        action: 'upload.create',
        method: methodOf(caller),
        actor: actorOf(caller),
        studyId: file.study_id,
        fileId,
        versionId: version.id,
      },
      info,
    );
    const outcome = await deps.files.addVersion(version, audit);
    if (outcome === 'created') return { file, version, upload: await instructions(deps, version) };
    await abortQuietly(deps, version);
    if (outcome === 'file_missing') throw new NotFoundError(`No file ${fileId}`);
  }
  throw new Error('Could not find a free version id');
}

async function pendingVersion(deps: UploadDeps, caller: Caller, fileId: string, versionId: string) {
  requireAuthenticated(caller);
  const notFound = () => new NotFoundError(`No version ${versionId} of file ${fileId}`);
  const version = await deps.files.getVersion(fileId, versionId);
  if (!version) throw notFound();
  requireWritable(caller, version.study_id, notFound);
  return version;
}

/** Fresh upload URLs for a pending version: the single PUT again, or the named parts of a multipart upload. */
export async function refreshUploadUrls(
  deps: UploadDeps,
  caller: Caller,
  fileId: string,
  versionId: string,
  partNumbers: number[] | undefined,
): Promise<{ upload: UploadInstructions }> {
  const v = await pendingVersion(deps, caller, fileId, versionId);
  if (v.state !== 'pending') throw new ConflictError(`Version ${versionId} is ${v.state}, not pending`);
  if (!v.multipart || !partNumbers) return { upload: await instructions(deps, v) };
  const mp = v.multipart;
  const bad = partNumbers.filter((n) => n > mp.part_count);
  if (bad.length) throw ValidationError.field('part_numbers', `this upload has ${mp.part_count} parts`);
  const ttl = deps.config.UPLOAD_URL_TTL_SECONDS;
  const parts = await Promise.all(
    [...new Set(partNumbers)].map(async (n) => ({
      part_number: n,
      url: await deps.store.presignPart(v.key, mp.upload_id, n, ttl),
    })),
  );
  return {
    upload: {
      type: 'multipart',
      method: 'PUT',
      upload_id: mp.upload_id,
      part_size: mp.part_size,
      part_count: mp.part_count,
      parts,
      expires_at: isoMicros(deps.clock.nowMs() + ttl * 1000),
    },
  };
}

/**
 * Confirms an upload. A single PUT is checked here and now: its size, and its SHA-256 (which S3 verified on the PUT
 * and reports back), then the version is `available` (200). A multipart upload is completed (S3 checks the
 * assembled size and its full-object CRC64NVME), moved to `verifying` and handed to the verification worker, which
 * streams the object to compute its SHA-256 within its own 15-minute budget (verify-upload.ts): the answer is
 * `verifying` (the handler's 202). A mismatch deletes the object and marks the version `failed`; an object not
 * uploaded yet leaves it pending. Confirming a version that is already verifying asks for its verification again.
 */
export async function confirmUpload(
  deps: ConfirmDeps,
  caller: Caller,
  fileId: string,
  versionId: string,
  parts: { part_number: number; etag: string }[] | undefined,
  info: RequestInfo,
): Promise<VersionRecord> {
  const v = await pendingVersion(deps, caller, fileId, versionId);
  if (v.state === 'available') return v;
  if (v.state === 'verifying') {
    await deps.verification.request({ fileId, versionId });
    return v;
  }
  if (v.state === 'failed')
    throw new ConflictError(`Version ${versionId} failed verification; upload a new version instead`);

  if (v.multipart) {
    if (!parts?.length)
      throw ValidationError.field('parts', 'a multipart upload is confirmed with its parts');
    const result = await deps.store.completeMultipart(
      v.key,
      v.multipart.upload_id,
      parts.map((p) => ({ partNumber: p.part_number, etag: p.etag })),
      v.size,
    );
    // A repeated confirmation finds the upload already completed: the object check below decides.
    if (!result.ok && !(await deps.store.stat(v.key)))
      throw ValidationError.field('parts', `S3 could not complete the upload: ${result.reason}`);
  }

  const stored = await deps.store.stat(v.key);
  if (!stored) throw new ConflictError(`Nothing has been uploaded for version ${versionId} yet`);
  const audit = newAudit(
    deps,
    {
      action: 'upload.confirm',
      method: methodOf(caller),
      actor: actorOf(caller),
      studyId: v.study_id,
      fileId,
      versionId,
    },
    info,
  );
  const confirmedAt = nowIso(deps.clock);
  let problem: string | null =
    stored.size !== v.size ? `size is ${stored.size} bytes, ${v.size} were declared` : null;

  if (!problem && v.multipart) {
    const handed = await deps.files.finishUpload(v, { state: 'verifying', confirmedAt }, audit);
    if (!handed) return currentVersion(deps, fileId, versionId);
    await deps.verification.request({ fileId, versionId });
    return { ...v, state: 'verifying', confirmed_at: confirmedAt, multipart: null };
  }
  if (!problem) {
    const actual = stored.sha256Base64
      ? Buffer.from(stored.sha256Base64, 'base64').toString('hex')
      : await deps.store.hash(v.key);
    if (actual !== v.sha256) problem = `SHA-256 is ${actual}, ${v.sha256} was declared`;
  }
  if (problem) {
    await deps.store.delete([v.key]);
    await deps.files.finishUpload(v, { state: 'failed', confirmedAt }, audit);
    throw new UploadMismatchError(
      `The uploaded object does not match: its ${problem}. The version is marked failed.`,
    );
  }
  const done = await deps.files.finishUpload(v, { state: 'available', confirmedAt }, audit);
  // A concurrent confirmation or deletion got there first; answer with what is stored now.
  if (!done) return currentVersion(deps, fileId, versionId);
  return { ...v, state: 'available', confirmed_at: confirmedAt, multipart: null };
}

async function currentVersion(deps: UploadDeps, fileId: string, versionId: string): Promise<VersionRecord> {
  const now = await deps.files.getVersion(fileId, versionId);
  if (!now) throw new NotFoundError(`No version ${versionId} of file ${fileId}`);
  return now;
}

export type VerifyOutcome = 'available' | 'failed' | 'skipped';

/**
 * The verification worker's job: stream the object of a `verifying` version from the store to compute its SHA-256
 * and compare size and hash with what the uploader declared; then `available`, or `failed` with the object deleted.
 * A version in any other state (verified by an earlier run, deleted) is left alone, so a repeated or duplicate
 * invocation is harmless. A store error is thrown, so the invocation is retried.
 */
export async function verifyUpload(
  deps: Pick<FilesDeps, 'files' | 'store' | 'clock'>,
  target: { fileId: string; versionId: string },
  opts: { deadlineMs?: number } = {},
): Promise<{ outcome: VerifyOutcome; reason?: string }> {
  const v = await deps.files.getVersion(target.fileId, target.versionId);
  if (v?.state !== 'verifying')
    return { outcome: 'skipped', reason: v ? `version is ${v.state}` : 'no such version' };
  const stored = await deps.store.stat(v.key);
  let problem: string | null = null;
  if (!stored) problem = 'the object is missing';
  else if (stored.size !== v.size) problem = `size is ${stored.size} bytes, ${v.size} were declared`;
  else {
    try {
      const actual = await deps.store.hash(v.key, opts);
      if (actual !== v.sha256) problem = `SHA-256 is ${actual}, ${v.sha256} was declared`;
    } catch (err) {
      // Too large to hash within the worker's budget: a retry would time out the same way, so the version fails
      // now rather than stay verifying forever (docs/files.md gives the largest size that fits).
      if (!hasCode(err, 'deadline')) throw err;
      problem = 'it could not be hashed within the verification budget (15 minutes)';
    }
  }
  const at = nowIso(deps.clock);
  if (problem) {
    if (stored) await deps.store.delete([v.key]);
    await deps.files.finishUpload(v, { state: 'failed', confirmedAt: at, from: 'verifying' }, null);
    return { outcome: 'failed', reason: problem };
  }
  const done = await deps.files.finishUpload(
    v,
    { state: 'available', confirmedAt: at, from: 'verifying' },
    null,
  );
  return done ? { outcome: 'available' } : { outcome: 'skipped', reason: 'finished concurrently' };
}
