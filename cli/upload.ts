import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { z } from 'zod';
import { waitUntilVerified } from '#clients/upload/confirm.js';
import {
  type PutAnswer,
  type PutRequest,
  UploadError,
  type UploadIo,
  type UploadProgress,
  type Version,
} from '#clients/upload/io.js';
import { finishMultipart } from '#clients/upload/send.js';
import { uploadVersion } from '#clients/upload/upload.js';
import type { FilesClient } from './api.js';
import { type CliConfig, CliError, readJson, removeFile, UsageError, writePrivateJson } from './config.js';
import { describeFetchError, must } from './http.js';
import type { Output } from './output.js';
import { type ByteBar, byteBar } from './progress.js';

/**
 * `drc files upload`: the upload client core (clients/upload/) with a file on disk, progress bars on stderr and a
 * resume state.
 *
 * Multipart uploads (above the service's threshold; the answer says which) keep a resume state file in
 * <config dir>/uploads/, keyed by study, absolute path, size and mtime, updated after every finished part with its
 * ETag. `--resume` reads it and sends only the parts it does not list, with freshly signed URLs, then confirms.
 * The state file is removed once the version is available.
 */
const resumeState = z.object({
  study: z.string(),
  path: z.string(),
  size: z.number(),
  mtime_ms: z.number(),
  sha256: z.string(),
  file_id: z.string(),
  version_id: z.string(),
  upload_id: z.string(),
  part_size: z.number().int().positive(),
  part_count: z.number().int().positive(),
  /** part number -> ETag of each finished part. */
  parts: z.record(z.string(), z.string()),
});
type ResumeState = z.infer<typeof resumeState>;

export interface UploadArgs {
  study: string;
  path: string;
  name?: string;
  description?: string;
  contentType?: string;
  /** Upload a new version of this file instead of a new file. */
  fileId?: string;
  resume: boolean;
}

export interface UploadResult {
  file_id: string;
  version: Version;
  parts_sent: number;
  parts_resumed: number;
}

function statePath(config: CliConfig, study: string, path: string, size: number, mtimeMs: number): string {
  const key = createHash('sha256')
    .update(`${study}\0${path}\0${size}\0${mtimeMs}`)
    .digest('hex')
    .slice(0, 32);
  return join(config.configDir, 'uploads', `${key}.json`);
}

const chunksOf = (path: string) => createReadStream(path, { highWaterMark: 1 << 20 });

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

/** The upload's progress as one bar per phase (hashing, uploading) and a line while the service verifies. */
function progressBars(o: Output) {
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
 * Runs one upload with drc's I/O: the core's own failures become CliErrors (a refused part says how to resume), and
 * a refusal after the declaration (a confirmation's mismatch deletes the object server-side; a version no longer
 * pending takes no parts) removes the resume state, since nothing is left to resume.
 */
async function withIo<T>(
  files: FilesClient,
  path: string,
  o: Output,
  fn: (io: UploadIo, declared: () => void) => Promise<T>,
  stateFile: string,
): Promise<T> {
  const bars = progressBars(o);
  let declared = false;
  try {
    const io: UploadIo = { files, must, put: putFrom(path), onProgress: bars.onProgress };
    return await fn(io, () => {
      declared = true;
    });
  } catch (err) {
    if (err instanceof UploadError)
      throw new CliError(
        err.part === undefined ? err.message : `${err.message}; \`drc files upload --resume\` continues`,
      );
    if (declared && err instanceof CliError && /HTTP 4(09|22)/.test(err.message)) removeFile(stateFile);
    throw err;
  } finally {
    bars.stop();
  }
}

export async function upload(
  config: CliConfig,
  files: FilesClient,
  args: UploadArgs,
  o: Output,
): Promise<UploadResult> {
  const path = resolve(args.path);
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch {
    throw new UsageError(`no such file: ${args.path}`);
  }
  if (!st.isFile()) throw new UsageError(`not a file: ${args.path}`);
  const size = st.size;
  const stateFile = statePath(config, args.study, path, size, st.mtimeMs);
  const saved = readJson(stateFile, resumeState);

  if (args.resume && saved) return resumeMultipart(files, saved, stateFile, path, o);
  if (saved && o.bars)
    o.err('an interrupted upload of this file exists; starting afresh (--resume continues it instead)');

  let state: ResumeState | undefined;
  const r = await withIo(
    files,
    path,
    o,
    (io, declared) =>
      uploadVersion(
        io,
        {
          target: args.fileId ? { fileId: args.fileId } : { studyId: args.study },
          file_name: basename(path),
          size,
          content_type: args.contentType,
          name: args.name,
          description: args.description,
          chunks: () => chunksOf(path),
          hasher: createHash('sha256'),
        },
        {
          onStarted: (started, sha256) => {
            declared();
            if (started.upload.type !== 'multipart') return;
            state = {
              study: args.study,
              path,
              size,
              mtime_ms: st.mtimeMs,
              sha256,
              file_id: started.file.kf_id,
              version_id: started.version.kf_id,
              upload_id: started.upload.upload_id,
              part_size: started.upload.part_size,
              part_count: started.upload.part_count,
              parts: {},
            };
            writePrivateJson(stateFile, state);
          },
          onPart: (n, etag) => {
            if (!state) return;
            state.parts[String(n)] = etag;
            writePrivateJson(stateFile, state);
          },
        },
      ),
    stateFile,
  );
  if (state) removeFile(stateFile);
  return { ...r, parts_resumed: 0 };
}

async function resumeMultipart(
  files: FilesClient,
  state: ResumeState,
  stateFile: string,
  path: string,
  o: Output,
): Promise<UploadResult> {
  const ids = { fileId: state.file_id, versionId: state.version_id };
  const v = await must(
    files.GET('/files/{fileId}/versions/{versionId}', { params: { path: ids } }),
    'GET version',
  );
  const done = Object.keys(state.parts).length;
  if (v.state === 'failed') {
    removeFile(stateFile);
    throw new CliError(`version ${v.kf_id} failed verification; upload the file again without --resume`);
  }
  if (v.state === 'pending' && o.bars)
    o.err(`resuming upload ${state.version_id}: ${done} of ${state.part_count} parts already sent`);
  const r = await withIo(
    files,
    path,
    o,
    async (io, declared) => {
      declared();
      // Confirmed in the interrupted run: only the verification is left.
      if (v.state !== 'pending')
        return { version: await waitUntilVerified(io, ids, state.sha256), parts_sent: 0 };
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
