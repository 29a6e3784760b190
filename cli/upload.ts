import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { z } from 'zod';
import { completeUpload, waitUntilVerified } from '#clients/upload/confirm.js';
import {
  type PutAnswer,
  type PutRequest,
  UploadError,
  type UploadIo,
  type UploadProgress,
  type Version,
} from '#clients/upload/io.js';
import { finishMultipart, sendSingle } from '#clients/upload/send.js';
import { uploadVersion } from '#clients/upload/upload.js';
import type { FilesClient } from './api.js';
import { type CliConfig, CliError, readJson, removeFile, UsageError, writePrivateJson } from './config.js';
import { describeFetchError, must } from './http.js';
import type { Output } from './output.js';
import { type ByteBar, byteBar } from './progress.js';

/**
 * One file of `drc files upload`: the upload client core (clients/upload/) with a file on disk, progress on stderr
 * and a resume state. Which files to upload, and whether each is new, a duplicate or already there, is
 * cli/bulk-upload.ts's to decide.
 *
 * Every upload keeps a resume state in <config dir>/uploads/, keyed by study, absolute path, size and mtime, from the
 * moment the service answers its declaration until its version is available: the file and version it made, and
 * for a multipart upload each finished part with its ETag. Running the same upload again continues it (the
 * default): a single PUT is sent again to a freshly signed URL of the same version, a multipart upload sends only
 * the parts the state does not list. `fresh` forgets the state and uploads the bytes again, as a new version of the
 * file the interrupted run made, so no second file is left behind.
 */
const common = {
  study: z.string(),
  path: z.string(),
  size: z.number(),
  mtime_ms: z.number(),
  sha256: z.string(),
  file_id: z.string(),
  version_id: z.string(),
};
const resumeState = z.union([
  z.object({ ...common, kind: z.literal('single') }),
  z.object({
    ...common,
    // States written before single PUTs had one are multipart.
    kind: z.literal('multipart').default('multipart'),
    upload_id: z.string(),
    part_size: z.number().int().positive(),
    part_count: z.number().int().positive(),
    /** part number -> ETag of each finished part. */
    parts: z.record(z.string(), z.string()),
  }),
]);
type ResumeState = z.infer<typeof resumeState>;

export interface UploadArgs {
  study: string;
  path: string;
  /** The name of the file, and of what a download of this version is called (default: the file's own name). */
  name?: string;
  description?: string;
  contentType?: string;
  /** Upload a new version of this file instead of a new file. */
  fileId?: string;
  /** Forget an interrupted upload of this path and send the bytes again. */
  fresh?: boolean;
  /** The file's SHA-256 when the caller hashed it already. */
  sha256?: string;
}

export interface UploadResult {
  file_id: string;
  version: Version;
  parts_sent: number;
  parts_resumed: number;
}

/** Where the file's upload reports: its own bars (one file), or a share of a batch's one bar. */
export interface UploadReport {
  onProgress?: (p: UploadProgress) => void;
  stop?: () => void;
}

export interface LocalFile {
  path: string;
  size: number;
  mtimeMs: number;
}

export function localFile(path: string): LocalFile {
  const abs = resolve(path);
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(abs);
  } catch {
    throw new UsageError(`no such file: ${path}`);
  }
  if (!st.isFile()) throw new UsageError(`not a file: ${path}`);
  return { path: abs, size: st.size, mtimeMs: st.mtimeMs };
}

function statePath(config: CliConfig, study: string, f: LocalFile): string {
  const key = createHash('sha256')
    .update(`${study}\0${f.path}\0${f.size}\0${f.mtimeMs}`)
    .digest('hex')
    .slice(0, 32);
  return join(config.configDir, 'uploads', `${key}.json`);
}

/** The saved state of an interrupted upload of this file to this study, if there is one. */
export function savedUpload(config: CliConfig, study: string, f: LocalFile): ResumeState | undefined {
  return readJson(statePath(config, study, f), resumeState);
}

const chunksOf = (path: string) => createReadStream(path, { highWaterMark: 1 << 20 });

/** The hex SHA-256 of a file, streamed. */
export async function hashOf(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of chunksOf(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The bytes [start, start+length) of the file as a request body, counting what is read into `onBytes`. */
function fileBody(path: string, start: number, length: number, onBytes: (n: number) => void) {
  if (length === 0) return new Uint8Array(0);
  const rs = createReadStream(path, { start, end: start + length - 1, highWaterMark: 1 << 20 });
  return (Readable.toWeb(rs) as ReadableStream<Uint8Array>).pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, c) {
        onBytes(chunk.byteLength);
        c.enqueue(chunk);
      },
    }),
  );
}

/** One PUT of a byte range of the file, streamed from disk with fetch. */
const putFrom =
  (path: string) =>
  async (req: PutRequest, onSent: (sent: number) => void): Promise<PutAnswer> => {
    let sent = 0;
    let res: Response;
    try {
      res = await fetch(req.url, {
        method: 'PUT',
        body: fileBody(path, req.start, req.length, (n) => {
          sent += n;
          onSent(sent);
        }),
        headers: { ...req.headers, 'Content-Length': String(req.length) },
        duplex: 'half',
      } as RequestInit);
    } catch (err) {
      throw new CliError(describeFetchError(req.url, err));
    }
    const text = await res.text();
    return { status: res.status, etag: res.headers.get('etag'), text };
  };

/** One file's progress as one bar per phase (hashing, uploading) and a line while the service verifies. */
export function fileBars(o: Output): Required<UploadReport> {
  let phase: UploadProgress['phase'] | undefined;
  let bar: ByteBar | undefined;
  return {
    onProgress(p: UploadProgress) {
      if (p.phase === phase) return bar?.set(p.loaded);
      bar?.stop();
      bar = undefined;
      phase = p.phase;
      if (p.phase === 'hashing') bar = byteBar(o, 'hashing  ', p.total, p.loaded);
      else if (p.phase === 'uploading') bar = byteBar(o, 'uploading', p.total, p.loaded);
      else if (p.phase === 'verifying' && o.bars)
        o.err('verifying the upload (the service hashes the stored object) ...');
    },
    stop: () => bar?.stop(),
  };
}

/**
 * Runs one upload with drc's I/O: the core's own failures become CliErrors, and a refusal after the declaration (a
 * confirmation's mismatch deletes the object server-side; a version no longer pending takes no parts) removes the
 * resume state, since nothing is left to resume.
 */
async function withIo<T>(
  files: FilesClient,
  path: string,
  report: UploadReport,
  fn: (io: UploadIo, declared: () => void) => Promise<T>,
  stateFile: string,
): Promise<T> {
  let declared = false;
  try {
    const io: UploadIo = { files, must, put: putFrom(path), onProgress: report.onProgress };
    return await fn(io, () => {
      declared = true;
    });
  } catch (err) {
    if (err instanceof UploadError)
      throw new CliError(
        err.part === undefined ? err.message : `${err.message}; run the same upload again to continue it`,
      );
    if (declared && err instanceof CliError && /HTTP 4(09|22)/.test(err.message)) removeFile(stateFile);
    throw err;
  } finally {
    report.stop?.();
  }
}

export async function upload(
  config: CliConfig,
  files: FilesClient,
  args: UploadArgs,
  report: UploadReport,
): Promise<UploadResult> {
  const f = localFile(args.path);
  const stateFile = statePath(config, args.study, f);
  const saved = readJson(stateFile, resumeState);
  if (saved && !args.fresh) {
    const resumed = await resume(files, saved, stateFile, report);
    if (resumed) return resumed;
  }
  removeFile(stateFile);
  // Starting over after an interrupted run: a new version of the file it made, never a second file.
  const fileId = args.fileId ?? saved?.file_id;
  let state: ResumeState | undefined;
  const base = { study: args.study, path: f.path, size: f.size, mtime_ms: f.mtimeMs };
  const r = await withIo(
    files,
    f.path,
    report,
    (io, declared) =>
      uploadVersion(
        io,
        {
          target: fileId ? { fileId } : { studyId: args.study },
          file_name: args.name ?? basename(f.path),
          size: f.size,
          content_type: args.contentType,
          name: args.name,
          description: args.description,
          chunks: () => chunksOf(f.path),
          hasher: createHash('sha256'),
          sha256: args.sha256,
        },
        {
          onStarted: (started, sha256) => {
            declared();
            const ids = { sha256, file_id: started.file.kf_id, version_id: started.version.kf_id };
            const up = started.upload;
            state =
              up.type === 'multipart'
                ? {
                    ...base,
                    ...ids,
                    kind: 'multipart',
                    upload_id: up.upload_id,
                    part_size: up.part_size,
                    part_count: up.part_count,
                    parts: {},
                  }
                : { ...base, ...ids, kind: 'single' };
            writePrivateJson(stateFile, state);
          },
          onPart: (n, etag) => {
            if (state?.kind !== 'multipart') return;
            state.parts[String(n)] = etag;
            writePrivateJson(stateFile, state);
          },
        },
      ),
    stateFile,
  );
  removeFile(stateFile);
  return { ...r, parts_resumed: 0 };
}

/**
 * Continues an interrupted upload of the same file: answers undefined when there is nothing to continue (the
 * version failed, or is gone), and the caller starts over.
 */
async function resume(
  files: FilesClient,
  state: ResumeState,
  stateFile: string,
  report: UploadReport,
): Promise<UploadResult | undefined> {
  const ids = { fileId: state.file_id, versionId: state.version_id };
  const found = await files.GET('/files/{fileId}/versions/{versionId}', { params: { path: ids } });
  if (found.response.status === 404) return undefined;
  const v = await must(Promise.resolve(found), 'GET version');
  if (v.state === 'failed') return undefined;
  const done = state.kind === 'multipart' ? Object.keys(state.parts).length : 0;
  const r = await withIo(
    files,
    state.path,
    report,
    async (io, declared) => {
      declared();
      // Confirmed in the interrupted run: only the verification is left.
      if (v.state !== 'pending')
        return { version: await waitUntilVerified(io, ids, state.sha256), parts_sent: 0 };
      if (state.kind === 'single') {
        const fresh = (
          await must(
            files.POST('/files/{fileId}/versions/{versionId}/upload-urls', {
              params: { path: ids },
              body: {},
            }),
            'POST upload-urls',
          )
        ).upload;
        if (fresh.type !== 'single')
          throw new UploadError('the service no longer treats this upload as one PUT');
        await sendSingle(io, ids, fresh, state.size);
        return { version: await completeUpload(io, ids, [], state.sha256), parts_sent: 1 };
      }
      const plan = {
        ...ids,
        size: state.size,
        partSize: state.part_size,
        partCount: state.part_count,
        done: state.parts,
        onPart: (n: number, etag: string) => {
          state.parts[String(n)] = etag;
          writePrivateJson(stateFile, state);
        },
      };
      return finishMultipart(io, plan, state.sha256);
    },
    stateFile,
  );
  removeFile(stateFile);
  return { file_id: state.file_id, version: r.version, parts_sent: r.parts_sent, parts_resumed: done };
}
