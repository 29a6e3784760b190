import type { Clock } from '../shared/clock.js';
import type { Page } from '../shared/list.js';
import type { FilesConfig } from './config.js';
import type {
  AuditRecord,
  DevTokenRecord,
  FileRecord,
  FileSummary,
  SignedTokenRecord,
  VersionRecord,
} from './model.js';

/**
 * What the file-service use cases need from the outside world. Adapters: functions/adapters/s3-store.ts and
 * functions/adapters/dynamodb/files-*.ts. No AWS type crosses these interfaces.
 */

export interface Listing<T> {
  count: number;
  items: T[];
}

/** `too_many_pending`: the study already has its cap of files with nothing confirmed (FilesConfig). */
export type CreateFileOutcome = 'created' | 'id_collision' | 'too_many_pending';
/** `too_many_pending`: the file already has its cap of pending versions (FilesConfig). */
export type AddVersionOutcome = 'created' | 'id_collision' | 'file_missing' | 'too_many_pending';

/** Files and their versions: one aggregate (a file's versions live in its item collection). */
export interface FileRepository {
  /**
   * Creates a file with its first (pending) version and the audit record, atomically, unless its study already has
   * `maxPendingFiles` files none of whose versions was confirmed.
   */
  createFile(
    file: FileRecord,
    version: VersionRecord,
    audit: AuditRecord,
    limits: { maxPendingFiles: number },
  ): Promise<CreateFileOutcome>;
  /** Adds a pending version to an existing file that is not being deleted and has fewer than the cap pending. */
  addVersion(
    version: VersionRecord,
    audit: AuditRecord,
    limits: { maxPendingVersions: number },
  ): Promise<AddVersionOutcome>;
  getFile(fileId: string): Promise<FileRecord | null>;
  /** Many files by id, in the order asked (null for an unknown id): one batched read per 100 ids. */
  getFiles(fileIds: readonly string[]): Promise<(FileRecord | null)[]>;
  /** The file and its newest available version (null when none is), by key: a read that no version count grows. */
  getFileWithLatest(fileId: string): Promise<{ file: FileRecord; latest: VersionRecord | null } | null>;
  /** Up to `limit` of a file's versions, in no particular order (a deletion takes them a batch at a time). */
  someVersions(fileId: string, limit: number): Promise<VersionRecord[]>;
  getVersion(fileId: string, versionId: string): Promise<VersionRecord | null>;
  /** Many versions by key, in the order asked (null for an unknown one): one batched read per 100 keys. */
  getVersions(keys: readonly { fileId: string; versionId: string }[]): Promise<(VersionRecord | null)[]>;
  /** The file a version id was issued under (version ids are unique across files), or null for an unknown id. */
  fileIdOfVersion(versionId: string): Promise<string | null>;
  /**
   * How many versions are available, and their total size. Kept as counters, changed in the same transaction that
   * makes a version available or deletes one, so reading them costs the same whatever the number of files.
   */
  availableTotals(): Promise<{ versions: number; bytes: number }>;
  listFiles(studyId: string, page: Page): Promise<Listing<FileRecord>>;
  /**
   * Each file's state and newest available version, in the order asked: one read by key per file, and for a file
   * with no available version one more for its newest version's state.
   */
  summaries(fileIds: readonly string[]): Promise<FileSummary[]>;
  /**
   * Whether a file of the study other than `exceptFileId` bears this name. It reads the study's files (up to all of
   * them) from an index, so a file created a moment before may be missed.
   */
  hasFileNamed(studyId: string, name: string, exceptFileId?: string): Promise<boolean>;
  listVersions(fileId: string, page: Page): Promise<Listing<VersionRecord>>;
  /**
   * Moves a version from `from` (pending, or verifying for the worker) to `available`, `failed` or `verifying`,
   * with its audit record when given (and, when it becomes available, the available totals); false when the version
   * is no longer in `from` (confirmed twice, finished by another run, or deleted meanwhile).
   */
  finishUpload(
    version: VersionRecord,
    outcome: {
      state: 'available' | 'failed' | 'verifying';
      confirmedAt: string;
      from?: 'pending' | 'verifying';
    },
    audit: AuditRecord | null,
  ): Promise<boolean>;
  /** Deletes a version (and takes it off the totals if it was available); nothing happens if it is already gone. */
  deleteVersion(version: VersionRecord, audit: AuditRecord): Promise<void>;
  /** Marks a file as being deleted so it takes no new versions; false when it does not exist. */
  beginDelete(fileId: string): Promise<boolean>;
  /** Deletes these versions of a file; false when one of them changed since it was read (read again). */
  deleteVersions(fileId: string, versions: VersionRecord[]): Promise<boolean>;
  /** Deletes the file itself, once its versions are gone, with its audit record. */
  deleteFile(file: FileRecord, audit: AuditRecord): Promise<void>;
}

export interface SignedTokenRepository {
  /** Stores a token (by hash) with its mint audit record, atomically. */
  create(hash: string, token: SignedTokenRecord, audit: AuditRecord): Promise<void>;
  /**
   * Claims a token with ONE conditional write: it must exist, be unclaimed, unexpired at `nowMs` and bound to this
   * very version. Returns the record on success, null otherwise (whatever the reason, the caller answers 401).
   */
  claim(
    hash: string,
    target: { studyId: string; fileId: string; versionId: string },
    nowMs: number,
    claimId: string,
  ): Promise<SignedTokenRecord | null>;
  /** Undoes a claim after a storage failure, so a download that never happened does not burn the token. */
  release(hash: string, claimId: string): Promise<void>;
  /**
   * Reads a token without claiming it (a HEAD): the record when a claim at `nowMs` for this very version would
   * succeed, null otherwise. A strongly consistent read; it writes nothing.
   */
  peek(
    hash: string,
    target: { studyId: string; fileId: string; versionId: string },
    nowMs: number,
  ): Promise<SignedTokenRecord | null>;
}

export interface DevTokenRepository {
  /** Stores the token by name and by hash with its audit record; false when the name is taken. */
  create(hash: string, token: DevTokenRecord, audit: AuditRecord): Promise<boolean>;
  /** Consistent read, so a deleted token stops working at once. */
  findByHash(hash: string): Promise<DevTokenRecord | null>;
  list(page: Page): Promise<Listing<DevTokenRecord>>;
  /** Deletes the token with its audit record; false when there is no token of that name. */
  delete(name: string, audit: (token: DevTokenRecord) => AuditRecord): Promise<boolean>;
}

export interface AuditLog {
  record(entry: AuditRecord): Promise<void>;
  query(
    filter: { studyId?: string; fileId?: string; actor?: string },
    page: Page,
  ): Promise<Listing<AuditRecord>>;
}

export interface StudyDirectory {
  /** True when the study is in the mirrored studies table and not marked deleted. */
  exists(studyId: string): Promise<boolean>;
}

export interface UploadedObject {
  size: number;
  /** Base64 SHA-256 of the whole object when the store reports one (S3 does for single PUTs with a checksum). */
  sha256Base64: string | null;
  /** The store's tag of these very bytes (S3's ETag), for a copy conditioned on them; null when not reported. */
  etag?: string | null;
}

/** A presigned PUT and the headers the uploader must send with it (they are part of its signature). */
export interface PresignedPut {
  url: string;
  headers: Record<string, string>;
}

/** A presigned GET and the instant (epoch ms) it stops working. */
export interface PresignedGet {
  url: string;
  expiresAtMs: number;
}

/**
 * What a conditional copy did: `copied`; `exists` (the destination was already written: it is never replaced);
 * `source_changed` (the source is no longer the object checked, or a concurrent write got in the way: look again);
 * `source_missing`.
 */
export type CopyOutcome = 'copied' | 'exists' | 'source_changed' | 'source_missing';

export interface ObjectStore {
  /**
   * A presigned PUT whose signature covers the declared SHA-256 as a header (`x-amz-checksum-sha256`), so that S3
   * itself refuses a body that does not match it.
   */
  presignPut(key: string, sha256Base64: string, expiresIn: number): Promise<PresignedPut>;
  /**
   * Copies `from` to `to` inside the store: only if `from` is still the object whose tag is `sourceEtag`, and only if
   * `to` does not exist yet, keeping a SHA-256 of the copy (which stat then reports).
   */
  copy(from: string, to: string, opts: { sourceEtag: string | null }): Promise<CopyOutcome>;
  /** A multipart upload with S3's full-object CRC64NVME checksum, so S3 itself checks the bytes it assembles. */
  startMultipart(key: string, contentType: string): Promise<string>;
  presignPart(key: string, uploadId: string, partNumber: number, expiresIn: number): Promise<string>;
  /** Refusals by the store (bad or missing parts, unknown upload) come back as data, with the store's reason. */
  completeMultipart(
    key: string,
    uploadId: string,
    parts: { partNumber: number; etag: string }[],
    size: number,
  ): Promise<{ ok: true } | { ok: false; reason: string }>;
  abortMultipart(key: string, uploadId: string): Promise<void>;
  stat(key: string): Promise<UploadedObject | null>;
  /**
   * Hex SHA-256 of the stored bytes, streamed. With `deadlineMs` (epoch ms) it gives up at that time with an error
   * of code `deadline`.
   */
  hash(key: string, opts?: { deadlineMs?: number }): Promise<string>;
  read(key: string): Promise<Uint8Array>;
  /**
   * A presigned GET that lives `expiresIn` seconds, or less when the credentials that sign it expire sooner (a
   * presigned URL dies with them); the answer says when it stops working. `signedAtMs` (default now) lets a service
   * clock decide when its lifetime starts.
   */
  presignGet(
    key: string,
    opts: { contentDisposition: string; contentType: string; expiresIn: number; signedAtMs?: number },
  ): Promise<PresignedGet>;
  delete(keys: string[]): Promise<void>;
}

/** Hands a confirmed multipart upload to the verification worker (asynchronously: Lambda async invoke on AWS). */
export interface UploadVerification {
  request(target: { fileId: string; versionId: string }): Promise<void>;
}

export interface FilesDeps {
  config: FilesConfig;
  clock: Clock;
  files: FileRepository;
  signedTokens: SignedTokenRepository;
  devTokens: DevTokenRepository;
  audit: AuditLog;
  studies: StudyDirectory;
  store: ObjectStore;
}
