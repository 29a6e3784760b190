import { basename, resolve } from 'node:path';
import type { FilesClient, FilesComponents } from './api.js';
import { CliError } from './config.js';
import { describeFetchError, must } from './http.js';
import type { Output } from './output.js';
import { type ByteBar, byteBar } from './progress.js';
import { fetchIntoFile, fetchIntoStream, type Opener } from './transfer.js';

type Version = FilesComponents['schemas']['Version'];

/**
 * `drc files download <study> <file>`: the version record first (its size and SHA-256), then the bytes through the
 * download route, following its 302 to the presigned S3 URL, into `<out>.<version>.part` (cli/transfer.ts: resumed
 * with Range, renamed to `<out>` once size and SHA-256 match the record). A whole study: cli/bulk-download.ts.
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

/**
 * Opens the bytes of a version through the download route. The API answers small objects itself (200) and larger
 * ones with a 302 to S3; the redirect is followed by hand so the Range header reaches S3 and the token does not.
 */
function opener(files: FilesClient, path: { studyId: string; fileId: string; versionId: string }): Opener {
  return async (offset) => {
    const range: Record<string, string> = offset > 0 ? { Range: `bytes=${offset}-` } : {};
    const first = await files
      .GET('/download/study/{studyId}/file/{fileId}/version/{versionId}', {
        params: { path },
        headers: range,
        redirect: 'manual',
        parseAs: 'stream',
      })
      .catch((err: unknown) => {
        throw new CliError(describeFetchError('download', err));
      });
    const res = first.response;
    if (res.status < 300 || res.status >= 400) return res;
    const location = res.headers.get('location');
    await res.body?.cancel();
    if (!location) throw new CliError(`the download answered ${res.status} without a Location`);
    try {
      return await fetch(location, { headers: range });
    } catch (err) {
      throw new CliError(describeFetchError(location, err));
    }
  };
}

export async function download(files: FilesClient, args: DownloadArgs, o: Output): Promise<DownloadResult> {
  const v = await versionToFetch(files, args.file, args.version);
  if (v.state !== 'available')
    throw new CliError(`version ${v.kf_id} is ${v.state}; only available versions can be downloaded`);
  const open = opener(files, { studyId: args.study, fileId: args.file, versionId: v.kf_id });
  const result = (path: string, resumedFrom: number): DownloadResult => ({
    path,
    file_id: args.file,
    version_id: v.kf_id,
    size: v.size,
    sha256: v.sha256,
    resumed_from: resumedFrom,
  });
  if (args.out === '-') {
    await fetchIntoStream(open, v, process.stdout);
    return result('-', 0);
  }
  const dest = resolve(args.out ?? basename(v.file_name));
  let bar: ByteBar | undefined;
  try {
    const { resumedFrom } = await fetchIntoFile({
      part: `${dest}.${v.kf_id}.part`,
      dest,
      expected: v,
      open,
      onResume: (bytes) => {
        bar = byteBar(o, 'downloading', v.size, bytes);
      },
      onBytes: (n) => bar?.tick(n),
    });
    return result(dest, resumedFrom);
  } finally {
    bar?.stop();
  }
}
