import { readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { mapLimit } from '#functions/shared/concurrency.js';
import type { FilesClient, FilesComponents } from './api.js';
import { type CliConfig, CliError, UsageError } from './config.js';
import { listPages, must } from './http.js';
import type { Output } from './output.js';
import { batchBar } from './progress.js';
import {
  fileBars,
  hashOf,
  type LocalFile,
  localFile,
  savedUpload,
  type UploadArgs,
  type UploadResult,
  upload,
} from './upload.js';

/**
 * `drc files upload <study> <paths…|dir>`: many files at once, each through cli/upload.ts (which resumes an
 * interrupted upload of the same file by default). Before anything is sent, each file is judged against the study's
 * files of the same name (one listing of the study):
 *
 * - one of them already holds these very bytes (size and SHA-256): nothing is sent, it is reported as present (so a
 *   script can run the same upload again until it has done everything);
 * - otherwise a file of that name is a duplicate, refused unless `allowDuplicate` (the file service accepts it and
 *   marks it `duplicate_name`; two files of one name overwrite each other in tools that download by name), or
 *   `fileId` names the file to add a version to;
 * - `fileId` must be a file of the study named on the command line.
 */
type StudyFile = FilesComponents['schemas']['File'];

export interface BatchArgs {
  study: string;
  paths: string[];
  name?: string;
  description?: string;
  contentType?: string;
  fileId?: string;
  fresh: boolean;
  allowDuplicate: boolean;
  jobs: number;
}

export interface BatchResult {
  uploaded: (UploadResult & { path: string })[];
  present: { path: string; file_id: string; version_id: string }[];
  failed: { path: string; error: string }[];
}

/** The files a path names: itself, or the regular files directly in a directory (not hidden, not nested). */
export function expandPaths(paths: string[]): LocalFile[] {
  const out: LocalFile[] = [];
  for (const p of paths) {
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(p);
    } catch {
      throw new UsageError(`no such file or directory: ${p}`);
    }
    if (!st.isDirectory()) {
      out.push(localFile(p));
      continue;
    }
    const names = readdirSync(p).filter((n) => !n.startsWith('.'));
    for (const n of names.sort()) if (statSync(join(p, n)).isFile()) out.push(localFile(join(p, n)));
  }
  const distinct = [...new Map(out.map((f) => [f.path, f])).values()];
  if (distinct.length === 0) throw new UsageError(`no file to upload in ${paths.join(' ')}`);
  return distinct;
}

/** The study's files by name (every page of its list). */
async function filesByName(files: FilesClient, study: string): Promise<Map<string, StudyFile[]>> {
  const all = await listPages(
    { limit: 100 },
    (query) =>
      must(
        files.GET('/studies/{studyId}/files', { params: { path: { studyId: study }, query } }),
        'GET files',
      ),
    true,
  );
  const byName = new Map<string, StudyFile[]>();
  for (const f of all.results) byName.set(f.name, [...(byName.get(f.name) ?? []), f]);
  return byName;
}

/** `--file` names a file of the study on the command line, or nothing is uploaded. */
async function checkTargetFile(files: FilesClient, study: string, fileId: string): Promise<void> {
  const f = await must(files.GET('/files/{fileId}', { params: { path: { fileId } } }), `GET file ${fileId}`);
  if (f.study_id !== study)
    throw new UsageError(
      `file ${fileId} belongs to study ${f.study_id}, not ${study}: name its own study, or leave out --file`,
    );
}

type Decision =
  | { kind: 'upload'; sha256?: string }
  | { kind: 'present'; file: StudyFile }
  | { kind: 'refused'; error: string };

async function decide(
  config: CliConfig,
  args: BatchArgs,
  f: LocalFile,
  byName: Map<string, StudyFile[]>,
): Promise<Decision> {
  // A new version of a named file, or an interrupted upload of this file to continue: no name to judge.
  if (args.fileId || (!args.fresh && savedUpload(config, args.study, f))) return { kind: 'upload' };
  const name = args.name ?? basename(f.path);
  const same = byName.get(name) ?? [];
  if (same.length === 0) return { kind: 'upload' };
  const sizeMatches = same.filter((s) => s.latest_version?.size === f.size);
  const sha256 = sizeMatches.length ? await hashOf(f.path) : undefined;
  const identical = sizeMatches.find((s) => s.latest_version?.sha256 === sha256);
  if (identical && !args.allowDuplicate) return { kind: 'present', file: identical };
  if (args.allowDuplicate) return { kind: 'upload', sha256 };
  const ids = same.map((s) => s.kf_id).join(', ');
  return {
    kind: 'refused',
    error:
      `a file named "${name}" is already in study ${args.study} (${ids}): --file ${same[0].kf_id} adds a ` +
      'version to it, --allow-duplicate uploads another file of that name',
  };
}

export async function uploadBatch(
  config: CliConfig,
  files: FilesClient,
  args: BatchArgs,
  o: Output,
  /** One file on its own: its own bars, and its failure thrown as it is. */
  single: boolean,
): Promise<BatchResult> {
  const local = expandPaths(args.paths);
  if (local.length > 1 && (args.fileId || args.name))
    throw new UsageError('--file and --name apply to one file; give one path');
  if (args.fileId) await checkTargetFile(files, args.study, args.fileId);
  const byName = args.fileId ? new Map<string, StudyFile[]>() : await filesByName(files, args.study);

  // Two files of this run with one name would be two files of that name in the study: the later ones are refused.
  const claimed = new Map<string, string>();
  const clash = new Map<string, string>();
  for (const f of local) {
    const name = args.name ?? basename(f.path);
    const first = claimed.get(name);
    if (first && !args.allowDuplicate && !args.fileId)
      clash.set(f.path, `${first} has the same name, "${name}": --allow-duplicate uploads both`);
    else claimed.set(name, f.path);
  }

  const result: BatchResult = { uploaded: [], present: [], failed: [] };
  const total = local.reduce((sum, f) => sum + f.size, 0);
  const bar = single ? undefined : batchBar(o, 'uploading', total, local.length);
  await mapLimit(local, args.jobs, async (f) => {
    let sent = 0;
    try {
      const d: Decision = clash.has(f.path)
        ? { kind: 'refused', error: clash.get(f.path) as string }
        : await decide(config, args, f, byName);
      if (d.kind === 'refused') throw new CliError(d.error);
      if (d.kind === 'present') {
        const v = d.file.latest_version;
        result.present.push({ path: f.path, file_id: d.file.kf_id, version_id: v?.kf_id ?? '' });
        bar?.tick(f.size);
        return;
      }
      const one: UploadArgs = { ...args, path: f.path, sha256: d.sha256 };
      const report = single
        ? fileBars(o)
        : {
            onProgress: (p: { phase: string; loaded: number }) => {
              if (p.phase !== 'uploading' || p.loaded <= sent) return;
              bar?.tick(p.loaded - sent);
              sent = p.loaded;
            },
          };
      result.uploaded.push({ path: f.path, ...(await upload(config, files, one, report)) });
    } catch (err) {
      if (single) throw err;
      const error = err instanceof Error ? err.message : String(err);
      result.failed.push({ path: f.path, error });
      bar?.log(`failed ${f.path}: ${error}`);
    } finally {
      bar?.fileDone();
    }
  });
  bar?.stop();
  return result;
}
