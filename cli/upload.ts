import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { z } from 'zod';
import type { FilesClient, FilesComponents } from './api.js';
import { type CliConfig, CliError, readJson, removeFile, UsageError, writePrivateJson } from './config.js';
import { creating, describeFetchError, must, s3ErrorMessage } from './http.js';
import type { Output } from './output.js';
import { byteBar } from './progress.js';

type Version = FilesComponents['schemas']['Version'];

/**
 * `drc files upload`: declare the file (size, SHA-256), send the bytes to the presigned URL(s), confirm.
 *
 * Multipart uploads (above the service's threshold; the answer says which) keep a resume state file in
 * <config dir>/uploads/, keyed by study, absolute path, size and mtime, updated after every finished part with its
 * ETag. `--resume` reads it and sends only the parts it does not list, with freshly signed URLs, then confirms.
 * The state file is removed once the version is available.
 */
const PART_CONCURRENCY = 3;
const PART_ATTEMPTS = 3;
/** Upload URLs live 5 minutes; ones older than this are signed again before use. */
const URL_MAX_AGE_MS = 4 * 60_000;
const VERIFY_POLL_MS = 1000;

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

async function sha256Of(path: string, o: Output, size: number): Promise<string> {
  const hash = createHash('sha256');
  const bar = byteBar(o, 'hashing  ', size);
  try {
    for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
      hash.update(chunk as Buffer);
      bar.tick((chunk as Buffer).length);
    }
  } finally {
    bar.stop();
  }
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

/**
 * PUTs a byte range to a presigned URL, with the headers its signature covers (a single PUT's declared SHA-256);
 * returns the ETag S3 answers.
 */
async function putRange(
  url: string,
  path: string,
  start: number,
  length: number,
  onBytes: (n: number) => void,
  signedHeaders: Record<string, string> = {},
): Promise<{ status: number; etag: string | null; text: string }> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'PUT',
      body: fileBody(path, start, length, onBytes),
      headers: { ...signedHeaders, 'Content-Length': String(length) },
      duplex: 'half',
    } as RequestInit);
  } catch (err) {
    throw new CliError(describeFetchError(url, err));
  }
  const text = await res.text();
  return { status: res.status, etag: res.headers.get('etag'), text };
}

/** S3's error message out of its XML error body, for the one line on stderr. */
const s3Message = (status: number, text: string) => s3ErrorMessage(text) ?? `HTTP ${status}`;

async function waitUntilVerified(
  files: FilesClient,
  fileId: string,
  versionId: string,
  o: Output,
): Promise<Version> {
  if (o.bars) o.err('verifying the upload (the service hashes the stored object) ...');
  for (;;) {
    const v = await must(
      files.GET('/files/{fileId}/versions/{versionId}', { params: { path: { fileId, versionId } } }),
      'GET version',
    );
    if (v.state === 'available') return v;
    if (v.state === 'failed')
      throw new CliError(`the service refused the upload: version ${versionId} failed verification`);
    await new Promise((r) => setTimeout(r, VERIFY_POLL_MS));
  }
}

async function confirm(
  files: FilesClient,
  fileId: string,
  versionId: string,
  body: { parts?: { part_number: number; etag: string }[] },
  o: Output,
): Promise<Version> {
  const v = await must(
    files.POST('/files/{fileId}/versions/{versionId}/confirm', {
      params: { path: { fileId, versionId } },
      body,
    }),
    'POST confirm',
  );
  if (v.state === 'available') return v;
  return waitUntilVerified(files, fileId, versionId, o);
}

function checkSha(v: Version, sha256: string): Version {
  if (v.sha256 !== sha256)
    throw new CliError(`the version record's SHA-256 ${v.sha256} differs from the file's ${sha256}`);
  return v;
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

  const sha256 = await sha256Of(path, o, size);
  const declared = { file_name: basename(path), size, sha256, content_type: args.contentType };
  const started = await must(
    args.fileId
      ? files.POST('/files/{fileId}/versions', {
          params: { path: { fileId: args.fileId } },
          body: declared,
          headers: creating(),
        })
      : files.POST('/studies/{studyId}/files', {
          params: { path: { studyId: args.study } },
          body: { ...declared, name: args.name, description: args.description },
          headers: creating(),
        }),
    'POST files',
  );
  const fileId = started.file.kf_id;
  const versionId = started.version.kf_id;

  if (started.upload.type === 'single') {
    const bar = byteBar(o, 'uploading', size);
    try {
      const { url, headers } = started.upload;
      const r = await putRange(url, path, 0, size, (n) => bar.tick(n), headers);
      if (r.status < 200 || r.status > 299)
        throw new CliError(`the upload was refused: ${s3Message(r.status, r.text)} (HTTP ${r.status})`);
    } finally {
      bar.stop();
    }
    const v = await confirm(files, fileId, versionId, {}, o);
    return { file_id: fileId, version: checkSha(v, sha256), parts_sent: 1, parts_resumed: 0 };
  }

  const state: ResumeState = {
    study: args.study,
    path,
    size,
    mtime_ms: st.mtimeMs,
    sha256,
    file_id: fileId,
    version_id: versionId,
    upload_id: started.upload.upload_id,
    part_size: started.upload.part_size,
    part_count: started.upload.part_count,
    parts: {},
  };
  writePrivateJson(stateFile, state);
  const urls = new Map<number, { url: string; at: number }>();
  for (const p of started.upload.parts) urls.set(p.part_number, { url: p.url, at: Date.now() });
  return sendParts(files, state, stateFile, path, urls, o);
}

async function resumeMultipart(
  files: FilesClient,
  state: ResumeState,
  stateFile: string,
  path: string,
  o: Output,
): Promise<UploadResult> {
  const v = await must(
    files.GET('/files/{fileId}/versions/{versionId}', {
      params: { path: { fileId: state.file_id, versionId: state.version_id } },
    }),
    'GET version',
  );
  const done = Object.keys(state.parts).length;
  if (v.state === 'available' || v.state === 'verifying') {
    const ready = v.state === 'available' ? v : await waitUntilVerified(files, state.file_id, v.kf_id, o);
    removeFile(stateFile);
    return {
      file_id: state.file_id,
      version: checkSha(ready, state.sha256),
      parts_sent: 0,
      parts_resumed: done,
    };
  }
  if (v.state === 'failed') {
    removeFile(stateFile);
    throw new CliError(`version ${v.kf_id} failed verification; upload the file again without --resume`);
  }
  if (o.bars) o.err(`resuming upload ${state.version_id}: ${done} of ${state.part_count} parts already sent`);
  return sendParts(files, state, stateFile, path, new Map(), o);
}

async function sendParts(
  files: FilesClient,
  state: ResumeState,
  stateFile: string,
  path: string,
  urls: Map<number, { url: string; at: number }>,
  o: Output,
): Promise<UploadResult> {
  const partLength = (n: number) => Math.min(state.part_size, state.size - (n - 1) * state.part_size);
  const missing: number[] = [];
  let alreadySent = 0;
  for (let n = 1; n <= state.part_count; n++) {
    if (state.parts[String(n)]) alreadySent += partLength(n);
    else missing.push(n);
  }
  const resumed = state.part_count - missing.length;

  // Fresh URLs for up to 100 parts at a time (the most one call signs), starting at the part that needs one.
  let signing: Promise<void> = Promise.resolve();
  const urlFor = async (n: number): Promise<string> => {
    const have = urls.get(n);
    if (have && Date.now() - have.at < URL_MAX_AGE_MS) return have.url;
    signing = signing.then(async () => {
      const cached = urls.get(n);
      if (cached && Date.now() - cached.at < URL_MAX_AGE_MS) return;
      const batch = missing.filter((m) => m >= n).slice(0, 100);
      const answer = await must(
        files.POST('/files/{fileId}/versions/{versionId}/upload-urls', {
          params: { path: { fileId: state.file_id, versionId: state.version_id } },
          body: { part_numbers: batch },
        }),
        'POST upload-urls',
      );
      if (answer.upload.type !== 'multipart')
        throw new CliError('the service no longer treats this upload as multipart');
      for (const p of answer.upload.parts) urls.set(p.part_number, { url: p.url, at: Date.now() });
    });
    await signing;
    const fresh = urls.get(n);
    if (!fresh) throw new CliError(`the service signed no URL for part ${n}`);
    return fresh.url;
  };

  const bar = byteBar(o, 'uploading', state.size, alreadySent);
  let sent = 0;
  const queue = [...missing];
  const sendOne = async (n: number) => {
    const start = (n - 1) * state.part_size;
    const length = partLength(n);
    for (let attempt = 1; ; attempt++) {
      let counted = 0;
      const r = await putRange(await urlFor(n), path, start, length, (b) => {
        counted += b;
        bar.tick(b);
      });
      if (r.status >= 200 && r.status <= 299 && r.etag) {
        state.parts[String(n)] = r.etag;
        writePrivateJson(stateFile, state);
        sent++;
        return;
      }
      bar.tick(-counted);
      // A refused signature (expired URL) is signed again; anything else is retried as it is.
      if (r.status === 403) urls.delete(n);
      if (attempt >= PART_ATTEMPTS)
        throw new CliError(
          `part ${n} was refused: ${s3Message(r.status, r.text)} (HTTP ${r.status}); \`drc files upload --resume\` continues`,
        );
    }
  };
  try {
    await Promise.all(
      Array.from({ length: Math.min(PART_CONCURRENCY, queue.length) }, async () => {
        for (let n = queue.shift(); n !== undefined; n = queue.shift()) await sendOne(n);
      }),
    );
  } finally {
    bar.stop();
  }

  const parts = Object.entries(state.parts)
    .map(([n, etag]) => ({ part_number: Number(n), etag }))
    .sort((a, b) => a.part_number - b.part_number);
  let v: Version;
  try {
    v = await confirm(files, state.file_id, state.version_id, { parts }, o);
  } catch (err) {
    // A refused confirmation (a mismatch) deletes the object server-side: nothing is left to resume.
    if (err instanceof CliError && /HTTP 4(09|22)/.test(err.message)) removeFile(stateFile);
    throw err;
  }
  removeFile(stateFile);
  return {
    file_id: state.file_id,
    version: checkSha(v, state.sha256),
    parts_sent: sent,
    parts_resumed: resumed,
  };
}
