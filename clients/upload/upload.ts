import { completeUpload } from './confirm.js';
import { type Hasher, sha256Hex } from './hash.js';
import type { UploadIo, UploadStarted, Version } from './io.js';
import { finishMultipart, sendSingle } from './send.js';

/**
 * The upload client core that drc (cli/upload.ts) and the dashboard (ui/src/upload.ts) share: the upload protocol
 * of docs/files.md. Hash the bytes, declare the file, PUT them to presigned URLs (send.ts), confirm, wait until
 * the service has verified the stored object, and check that its SHA-256 is the file's (confirm.ts).
 */
export interface UploadRequest {
  /** A new file in a study, or a new version of an existing file. */
  target: { studyId: string } | { fileId: string };
  file_name: string;
  size: number;
  content_type?: string;
  /** A new file's display name (default: its file name) and description. */
  name?: string;
  description?: string;
  /** Every byte of the file, in order, read once for its SHA-256. */
  chunks: () => AsyncIterable<Uint8Array>;
  hasher?: Hasher;
  /** The file's hex SHA-256 when the caller has it already: the bytes are not read for it again. */
  sha256?: string;
}

export interface UploadHooks {
  /** The service's answer to the declaration, with the SHA-256 declared (drc keeps its resume state from here). */
  onStarted?: (started: UploadStarted, sha256: string) => void;
  /** A part is stored, with the ETag its confirmation needs. */
  onPart?: (partNumber: number, etag: string) => void;
}

export interface Uploaded {
  file_id: string;
  version: Version;
  parts_sent: number;
}

/** One upload, which makes a version of a file: hash, declare, send, confirm, and the version once verified. */
export async function uploadVersion(
  io: UploadIo,
  req: UploadRequest,
  hooks: UploadHooks = {},
): Promise<Uploaded> {
  const total = req.size;
  io.onProgress?.({ phase: 'hashing', loaded: 0, total });
  const sha256 =
    req.sha256 ??
    (await sha256Hex(
      req.chunks(),
      (loaded) => io.onProgress?.({ phase: 'hashing', loaded, total }),
      req.hasher,
    ));
  const declared = {
    file_name: req.file_name,
    size: req.size,
    sha256,
    ...(req.content_type ? { content_type: req.content_type } : {}),
  };
  // A fresh Idempotency-Key: a declaration sent again is answered with the first one's file and version.
  const init = { headers: { 'Idempotency-Key': crypto.randomUUID() }, signal: io.signal };
  const started = await io.must(
    'fileId' in req.target
      ? io.files.POST('/files/{fileId}/versions', {
          params: { path: { fileId: req.target.fileId } },
          body: declared,
          ...init,
        })
      : io.files.POST('/studies/{studyId}/files', {
          params: { path: { studyId: req.target.studyId } },
          body: { ...declared, name: req.name, description: req.description },
          ...init,
        }),
    'POST files',
  );
  hooks.onStarted?.(started, sha256);
  const ids = { fileId: started.file.kf_id, versionId: started.version.kf_id };
  const { upload } = started;
  if (upload.type === 'single') {
    await sendSingle(io, ids, upload, total);
    const version = await completeUpload(io, ids, [], sha256);
    return { file_id: ids.fileId, version, parts_sent: 1 };
  }
  const plan = {
    ...ids,
    size: total,
    partSize: upload.part_size,
    partCount: upload.part_count,
    urls: upload.parts,
    onPart: hooks.onPart,
  };
  const { version, parts_sent } = await finishMultipart(io, plan, sha256);
  return { file_id: ids.fileId, version, parts_sent };
}
