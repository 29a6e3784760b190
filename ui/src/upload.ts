import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { type Api, createHeaders, type FileVersion, must, type UploadInstructions } from './api';

/**
 * Uploads straight to S3, as docs/files.md describes: hash the file, ask the file service for presigned URLs
 * (one PUT, or one per part above the multipart threshold), PUT the bytes with progress, then confirm. The bytes
 * never pass through the API.
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
/** Parts in flight at once. */
const PART_CONCURRENCY = 3;

export async function sha256Hex(blob: Blob, onProgress: (done: number) => void): Promise<string> {
  const hash = sha256.create();
  for (let offset = 0; offset < blob.size; offset += HASH_SLICE) {
    const chunk = new Uint8Array(await blob.slice(offset, offset + HASH_SLICE).arrayBuffer());
    hash.update(chunk);
    onProgress(Math.min(blob.size, offset + HASH_SLICE));
  }
  return bytesToHex(hash.digest());
}

class StorageError extends Error {
  constructor(readonly status: number) {
    super(`The storage refused the upload (HTTP ${status})`);
  }
}

/** A presigned URL and the headers its signature covers (a single PUT's declared SHA-256). */
interface Target {
  url: string;
  headers?: Record<string, string>;
}

/** One PUT with upload progress (fetch has none); resolves with the answer's ETag. */
function put(
  target: Target,
  body: Blob,
  onProgress: (sent: number) => void,
  signal?: AbortSignal,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', target.url);
    for (const [name, value] of Object.entries(target.headers ?? {})) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(body.size);
        resolve(xhr.getResponseHeader('ETag') ?? '');
      } else reject(new StorageError(xhr.status));
    };
    xhr.onerror = () => reject(new Error('The upload could not reach the storage'));
    xhr.onabort = () => reject(new DOMException('Upload aborted', 'AbortError'));
    signal?.addEventListener('abort', () => xhr.abort(), { once: true });
    xhr.send(body);
  });
}

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
  onState({ phase: 'hashing', loaded: 0, total });
  const digest = await sha256Hex(file, (done) => onState({ phase: 'hashing', loaded: done, total }));
  const declared = {
    file_name: file.name,
    size: file.size,
    sha256: digest,
    ...(file.type ? { content_type: file.type } : {}),
  };
  const init = { body: declared, headers: createHeaders(), signal };
  const started = await must(
    target.fileId
      ? api.files.POST('/files/{fileId}/versions', { params: { path: { fileId: target.fileId } }, ...init })
      : api.files.POST('/studies/{studyId}/files', {
          params: { path: { studyId: target.studyId ?? '' } },
          ...init,
        }),
  );

  onState({ phase: 'uploading', loaded: 0, total });
  const { upload } = started;
  const path = { fileId: started.file.kf_id, versionId: started.version.kf_id };
  const resign = (body: { part_numbers?: number[] }): Promise<{ upload: UploadInstructions }> =>
    must(
      api.files.POST('/files/{fileId}/versions/{versionId}/upload-urls', { params: { path }, body, signal }),
    );
  /** Presigned URLs live 5 minutes: a PUT that starts later is refused (403), so it is signed again, once. */
  const putFresh = async (
    target: Target,
    blob: Blob,
    progress: (n: number) => void,
    again: () => Promise<Target>,
  ) => {
    try {
      return await put(target, blob, progress, signal);
    } catch (err) {
      if (!(err instanceof StorageError) || err.status !== 403) throw err;
      return put(await again(), blob, progress, signal);
    }
  };
  let confirmBody: { parts?: { part_number: number; etag: string }[] } = {};
  if (upload.type === 'single') {
    await putFresh(
      { url: upload.url, headers: upload.headers },
      file,
      (sent) => onState({ phase: 'uploading', loaded: sent, total }),
      async () => {
        const fresh = (await resign({})).upload;
        return fresh.type === 'single' ? { url: fresh.url, headers: fresh.headers } : { url: '' };
      },
    );
  } else {
    const urls = new Map(upload.parts.map((p) => [p.part_number, p.url]));
    const sent = new Map<number, number>();
    const report = () =>
      onState({ phase: 'uploading', loaded: [...sent.values()].reduce((a, b) => a + b, 0), total });
    const etags: { part_number: number; etag: string }[] = [];
    let next = 1;
    const worker = async () => {
      while (next <= upload.part_count) {
        const n = next++;
        let url = urls.get(n);
        if (!url) {
          // Only the first parts' URLs come with the answer; sign the next hundred when they are needed.
          const numbers = Array.from({ length: Math.min(100, upload.part_count - n + 1) }, (_, i) => n + i);
          const more = (await resign({ part_numbers: numbers })).upload;
          if (more.type === 'multipart') for (const p of more.parts) urls.set(p.part_number, p.url);
          url = urls.get(n) as string;
        }
        const start = (n - 1) * upload.part_size;
        const etag = await putFresh(
          { url },
          file.slice(start, Math.min(total, start + upload.part_size)),
          (bytes) => {
            sent.set(n, bytes);
            report();
          },
          async () => {
            const fresh = (await resign({ part_numbers: [n] })).upload;
            return { url: fresh.type === 'multipart' ? (fresh.parts[0]?.url ?? '') : '' };
          },
        );
        if (!etag)
          throw new Error('The storage did not return the ETag of a part (check its CORS ExposeHeaders)');
        etags.push({ part_number: n, etag });
      }
    };
    await Promise.all(Array.from({ length: Math.min(PART_CONCURRENCY, upload.part_count) }, worker));
    confirmBody = { parts: etags.sort((a, b) => a.part_number - b.part_number) };
  }

  onState({ phase: 'confirming', loaded: total, total });
  // started.confirm_url names this same route.
  const version = await must(
    api.files.POST('/files/{fileId}/versions/{versionId}/confirm', {
      params: { path },
      body: confirmBody,
      signal,
    }),
  );
  onState({ phase: 'done', loaded: total, total, version });
  return version;
}
