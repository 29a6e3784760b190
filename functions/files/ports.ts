import type { Clock } from '../shared/clock.js';
import type { Page } from '../shared/list.js';
import type { FilesConfig } from './config.js';
import type { AuditRecord, DevTokenRecord, FileRecord, SignedTokenRecord, VersionRecord } from './model.js';

/**
 * What the file-service use cases need from the outside world. Adapters: functions/adapters/s3-store.ts and
 * functions/adapters/dynamodb/files-*.ts. No AWS type crosses these interfaces.
 */

export interface Listing<T> {
  count: number;
  items: T[];
}

export type CreateFileOutcome = 'created' | 'id_collision';
export type AddVersionOutcome = 'created' | 'id_collision' | 'file_missing';

/** Files and their versions: one aggregate (a file's versions live in its item collection). */
export interface FileRepository {
  /** Creates a file with its first (pending) version and the audit record, atomically. */
  createFile(file: FileRecord, version: VersionRecord, audit: AuditRecord): Promise<CreateFileOutcome>;
  /** Adds a pending version to an existing file that is not being deleted. */
  addVersion(version: VersionRecord, audit: AuditRecord): Promise<AddVersionOutcome>;
  getFile(fileId: string): Promise<FileRecord | null>;
  /** Many files by id, in the order asked (null for an unknown id): one batched read per 100 ids. */
  getFiles(fileIds: readonly string[]): Promise<(FileRecord | null)[]>;
  /** The file and all its versions in one read. */
  getFileWithVersions(fileId: string): Promise<{ file: FileRecord; versions: VersionRecord[] } | null>;
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
  deleteFile(file: FileRecord, versions: VersionRecord[], audit: AuditRecord): Promise<void>;
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
}

export interface ObjectStore {
  /** A presigned PUT; with the checksum signed in, S3 itself refuses a body that does not match. */
  presignPut(key: string, sha256Base64: string, expiresIn: number): Promise<string>;
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
  /** A presigned GET; `signedAtMs` (default now) lets a service clock decide when its lifetime starts. */
  presignGet(
    key: string,
    opts: { contentDisposition: string; contentType: string; expiresIn: number; signedAtMs?: number },
  ): Promise<string>;
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
