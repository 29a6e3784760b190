import type { PutAnswer, PutRequest, UploadIo } from '../../clients/upload/io';
import { uploadVersion } from '../../clients/upload/upload';
import { type Api, type FileVersion, must } from './api';

/**
 * Uploads straight to S3 with the upload client core (clients/upload/, shared with drc): hash the file, ask the
 * file service for presigned URLs (one PUT, or one per part above the multipart threshold), PUT the bytes with
 * progress, confirm, and wait until the service has verified it. The bytes never pass through the API. This side
 * brings the File, the PUT (XMLHttpRequest: fetch reports no upload progress) and the state the page shows.
 */
export type UploadPhase = 'hashing' | 'uploading' | 'confirming' | 'done' | 'failed';

export interface UploadState {
  phase: UploadPhase;
  /** Bytes hashed or sent so far, of `total`. */
  loaded: number;
  total: number;
  error?: string;
  version?: FileVersion;
}

/** Read in slices so a file of any size is hashed in constant memory. */
const HASH_SLICE = 8 * 1024 * 1024;

async function* slices(blob: Blob): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < blob.size; offset += HASH_SLICE)
    yield new Uint8Array(await blob.slice(offset, offset + HASH_SLICE).arrayBuffer());
}

/** One PUT of a slice of the file, with upload progress; resolves with whatever the storage answers. */
const putFrom =
  (file: Blob) =>
  (req: PutRequest, onSent: (sent: number) => void): Promise<PutAnswer> =>
    new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open('PUT', req.url);
      for (const [name, value] of Object.entries(req.headers)) xhr.setRequestHeader(name, value);
      xhr.upload.onprogress = (e) => onSent(e.loaded);
      xhr.onload = () =>
        resolve({ status: xhr.status, etag: xhr.getResponseHeader('ETag'), text: xhr.responseText });
      xhr.onerror = () => reject(new Error('The upload could not reach the storage'));
      xhr.onabort = () => reject(new DOMException('Upload aborted', 'AbortError'));
      req.signal?.addEventListener('abort', () => xhr.abort(), { once: true });
      xhr.send(file.slice(req.start, req.start + req.length));
    });

export interface UploadTarget {
  /** New file in a study, or a new version of an existing file. */
  studyId?: string;
  fileId?: string;
}

export async function uploadFile(
  api: Api,
  target: UploadTarget,
  file: File,
  onState: (s: UploadState) => void,
  signal?: AbortSignal,
): Promise<FileVersion> {
  const total = file.size;
  const io: UploadIo = {
    files: api.files,
    must: (call) => must(call),
    put: putFrom(file),
    signal,
    onProgress: (p) =>
      onState(
        p.phase === 'hashing' || p.phase === 'uploading'
          ? { phase: p.phase, loaded: p.loaded, total }
          : { phase: 'confirming', loaded: total, total },
      ),
  };
  const { version } = await uploadVersion(io, {
    target: target.fileId ? { fileId: target.fileId } : { studyId: target.studyId ?? '' },
    file_name: file.name,
    size: file.size,
    ...(file.type ? { content_type: file.type } : {}),
    chunks: () => slices(file),
  });
  onState({ phase: 'done', loaded: total, total, version });
  return version;
}
