import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, renameSync, rmSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { s3ErrorMessage } from '#clients/storage.js';
import type { FilesClient, FilesComponents } from './api.js';
import { CliError } from './config.js';
import { apiMessage, describeFetchError, jsonOrUndefined, must } from './http.js';
import type { Output } from './output.js';
import { byteBar } from './progress.js';

type Version = FilesComponents['schemas']['Version'];

/**
 * `drc files download`: the version record first (its size and SHA-256), then the bytes through the download
 * route, following its 302 to the presigned S3 URL. The bytes go to `<out>.<version>.part` and are renamed to
 * `<out>` only once size and SHA-256 match the record. A `.part` left by an interrupted run is continued with
 * `Range: bytes=<its size>-`; a server that answers the whole object instead (200) is read from the start.
 */
export interface DownloadArgs {
  study: string;
  file: string;
  version?: string;
  /** Output path; `-` writes the bytes to stdout (no resume). Default: the version's file name. */
  out?: string;
}

export interface DownloadResult {
  path: string;
  file_id: string;
  version_id: string;
  size: number;
  sha256: string;
  /** Bytes already on disk from an interrupted run, asked for with Range. */
  resumed_from: number;
}

async function versionToFetch(files: FilesClient, fileId: string, versionId?: string): Promise<Version> {
  if (versionId)
    return must(
      files.GET('/files/{fileId}/versions/{versionId}', { params: { path: { fileId, versionId } } }),
      'GET version',
    );
  // Newest first: the first available version is the one a download without a version serves.
  let query: Record<string, string> = { limit: '100' };
  for (;;) {
    const page = await must(
      files.GET('/files/{fileId}/versions', {
        params: { path: { fileId }, query: query as { limit?: number } },
      }),
      'GET versions',
    );
    const v = page.results.find((x) => x.state === 'available');
    if (v) return v;
    if (!page.next) throw new CliError(`file ${fileId} has no available version`);
    query = Object.fromEntries(new URL(page.next).searchParams);
  }
}

async function hashExisting(path: string, hash: ReturnType<typeof createHash>): Promise<void> {
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
}

const sizeOf = (path: string): number => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

export async function download(files: FilesClient, args: DownloadArgs, o: Output): Promise<DownloadResult> {
  const v = await versionToFetch(files, args.file, args.version);
  if (v.state !== 'available')
    throw new CliError(`version ${v.kf_id} is ${v.state}; only available versions can be downloaded`);
  const toStdout = args.out === '-';
  const dest = toStdout ? '-' : resolve(args.out ?? basename(v.file_name));
  const part = `${dest}.${v.kf_id}.part`;
  let offset = toStdout ? 0 : sizeOf(part);
  if (offset > v.size) {
    rmSync(part, { force: true });
    offset = 0;
  }
  let resumedFrom = offset;
  let hash = createHash('sha256');
  if (offset > 0) await hashExisting(part, hash);

  if (offset < v.size) {
    const range: Record<string, string> = offset > 0 ? { Range: `bytes=${offset}-` } : {};
    // The API answers small objects itself (200) and larger ones with a 302 to S3; the redirect is followed by
    // hand so the Range header reaches S3 and the bearer token does not.
    const first = await files
      .GET('/download/study/{studyId}/file/{fileId}/version/{versionId}', {
        params: { path: { studyId: args.study, fileId: args.file, versionId: v.kf_id } },
        headers: range,
        redirect: 'manual',
        parseAs: 'stream',
      })
      .catch((err: unknown) => {
        throw new CliError(describeFetchError('download', err));
      });
    let res = first.response;
    if (res.status >= 300 && res.status < 400) {
      const location = res.headers.get('location');
      await res.body?.cancel();
      if (!location) throw new CliError(`the download answered ${res.status} without a Location`);
      try {
        res = await fetch(location, { headers: range });
      } catch (err) {
        throw new CliError(describeFetchError(location, err));
      }
    }
    if (res.status !== 200 && res.status !== 206) {
      const text = await res.text();
      throw new CliError(
        `download refused: ${s3ErrorMessage(text) ?? apiMessage(res.status, jsonOrUndefined(text))} (HTTP ${res.status})`,
      );
    }
    if (res.status === 200 && offset > 0) {
      // The whole object came back instead of the range: read it from the start.
      offset = 0;
      resumedFrom = 0;
      hash = createHash('sha256');
    }
    if (res.status === 206 && !(res.headers.get('content-range') ?? '').startsWith(`bytes ${offset}-`))
      throw new CliError(`the server answered another range: ${res.headers.get('content-range')}`);
    await receive(res, hash, offset, v, toStdout ? null : part, o);
  }
  return finish(v, args.file, hash.digest('hex'), dest, part, toStdout, resumedFrom);
}

async function receive(
  res: Response,
  hash: ReturnType<typeof createHash>,
  offset: number,
  v: Version,
  part: string | null,
  o: Output,
): Promise<void> {
  if (!res.body) throw new CliError('the download has no body');
  const bar = part ? byteBar(o, 'downloading', v.size, offset) : byteBar({ ...o, bars: false }, '', 0);
  const count = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      bar.tick(chunk.length);
      cb(null, chunk);
    },
  });
  try {
    await pipeline(
      Readable.fromWeb(res.body as import('node:stream/web').ReadableStream),
      count,
      part ? createWriteStream(part, { flags: offset > 0 ? 'a' : 'w' }) : process.stdout,
    );
  } catch (err) {
    throw new CliError(
      `the download broke off: ${err instanceof Error ? err.message : String(err)}; run it again to resume`,
    );
  } finally {
    bar.stop();
  }
}

function finish(
  v: Version,
  fileId: string,
  sha256: string,
  dest: string,
  part: string,
  toStdout: boolean,
  resumedFrom: number,
): DownloadResult {
  const size = toStdout ? v.size : sizeOf(part);
  if (size !== v.size || sha256 !== v.sha256) {
    if (!toStdout) rmSync(part, { force: true });
    throw new CliError(
      size !== v.size
        ? `size mismatch: got ${size} bytes, the version record says ${v.size}`
        : `SHA-256 mismatch: got ${sha256}, the version record says ${v.sha256}`,
    );
  }
  if (!toStdout) renameSync(part, dest);
  return {
    path: dest,
    file_id: fileId,
    version_id: v.kf_id,
    size,
    sha256,
    resumed_from: resumedFrom,
  };
}
