import { statSync } from 'node:fs';
import { type Command, InvalidArgumentError } from 'commander';
import type { FilesComponents } from '../api.js';
import { type BulkResult, bulkDownload } from '../bulk-download.js';
import { type BatchResult, uploadBatch } from '../bulk-upload.js';
import { CliError, UsageError } from '../config.js';
import { download } from '../download.js';
import { creating, listPages, must } from '../http.js';
import { type Column, mib, type Output, record, show, showList } from '../output.js';
import type { CommandContext } from '../session.js';
import { listOptions, pageQuery } from './options.js';

/** One file's upload: its version (as a single upload has always answered), or why it was not sent. */
function showOne(o: Output, r: BatchResult): void {
  const failed = r.failed[0];
  if (failed) throw new CliError(failed.error);
  const present = r.present[0];
  if (present) {
    const value = { file_id: present.file_id, version_id: present.version_id, already_uploaded: true };
    show(o, value, () => `already in the study: file ${present.file_id}, version ${present.version_id}`);
    return;
  }
  const u = r.uploaded[0];
  show(
    o,
    { file_id: u.file_id, version: u.version, parts_sent: u.parts_sent, parts_resumed: u.parts_resumed },
    () =>
      `${record(u.version as unknown as Record<string, unknown>, ['kf_id', 'file_name', 'size', 'sha256', 'state', 'study_id'])}\n` +
      `file ${u.file_id}: ${mib(u.version.size)} uploaded, SHA-256 checked` +
      (u.parts_resumed
        ? ` (${u.parts_resumed} part(s) from the interrupted upload, ${u.parts_sent} sent now)`
        : ''),
  );
}

function bulkSummary(r: BulkResult): string {
  const rate = r.seconds > 0 ? ` (${(r.bytes / 1e6 / r.seconds).toFixed(1)} MB/s)` : '';
  return (
    `${r.directory}: ${r.downloaded.length} downloaded, ${r.present} already there, ${r.skipped.length} skipped ` +
    `(no available version), ${r.failed.length} failed; ${mib(r.bytes)} in ${r.seconds.toFixed(1)} s${rate}`
  );
}

type FileRecord = FilesComponents['schemas']['File'];

const fileColumns: Column<FileRecord>[] = [
  { header: 'id', value: (f) => f.kf_id },
  { header: 'name', value: (f) => f.name },
  { header: 'state', value: (f) => f.state },
  { header: 'size', value: (f) => (f.latest_version ? f.latest_version.size : '') },
  { header: 'sha256', value: (f) => (f.latest_version ? `${f.latest_version.sha256.slice(0, 12)}…` : '') },
  { header: 'latest version', value: (f) => f.latest_version?.kf_id ?? '' },
  { header: 'created', value: (f) => f.created_at },
];

const jobs = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 64) throw new InvalidArgumentError('expected 1 to 64');
  return n;
};

/** `drc files …` and `drc signed-url`: a study's files, their transfers and their download links. */
export function addFileCommands(program: Command, { session }: CommandContext): void {
  const files = program.command('files').description('study files');
  listOptions(files.command('ls <study>').description("list a study's files")).action(
    async (study: string, opts, cmd: Command) => {
      const s = session(cmd);
      const api = await s.files();
      const page = await listPages(
        pageQuery(opts),
        (query) =>
          must(
            api.GET('/studies/{studyId}/files', { params: { path: { studyId: study }, query } }),
            'GET files',
          ),
        Boolean(opts.all),
      );
      showList(s.o, page, fileColumns);
    },
  );
  files
    .command('upload <study> <paths...>')
    .description(
      'upload files (or the files of a directory) to a study, several at once, each SHA-256 checked; ' +
        'an interrupted upload of the same file continues where it stopped',
    )
    .option(
      '--name <name>',
      'one file: its name, and the name a download of it gets (default: its file name)',
    )
    .option('--description <text>', 'description')
    .option('--content-type <type>', 'media type')
    .option('--file <fileId>', 'one file: upload it as a new version of this file of the study')
    .option('--fresh', 'start interrupted uploads over instead of continuing them')
    .option('--resume', 'continue interrupted uploads (the default)')
    .option('--allow-duplicate', 'upload a file even when the study has a file of the same name')
    .option('-j, --jobs <n>', 'files uploaded at once (default 4)', jobs, 4)
    .action(async (study: string, paths: string[], opts, cmd: Command) => {
      const s = session(cmd);
      if (opts.fresh && opts.resume) throw new UsageError('--fresh and --resume exclude each other');
      const api = await s.files();
      const single = paths.length === 1 && !statSync(paths[0], { throwIfNoEntry: false })?.isDirectory();
      const r = await uploadBatch(
        s.config,
        api,
        {
          study,
          paths,
          name: opts.name,
          description: opts.description,
          contentType: opts.contentType,
          fileId: opts.file,
          fresh: Boolean(opts.fresh),
          allowDuplicate: Boolean(opts.allowDuplicate),
          jobs: opts.jobs,
        },
        s.o,
        single,
      );
      if (single) {
        showOne(s.o, r);
        return;
      }
      const summary = {
        ...r,
        uploaded: r.uploaded.map((u) => ({
          path: u.path,
          file_id: u.file_id,
          version_id: u.version.kf_id,
          size: u.version.size,
          sha256: u.version.sha256,
          parts_sent: u.parts_sent,
          parts_resumed: u.parts_resumed,
        })),
      };
      show(
        s.o,
        summary,
        () =>
          `${r.uploaded.length} uploaded, ${r.present.length} already in the study, ${r.failed.length} failed`,
      );
      if (r.failed.length)
        throw new CliError(
          `${r.failed.length} of ${r.uploaded.length + r.present.length + r.failed.length} files failed`,
        );
    });
  files
    .command('download [study] [file]')
    .description(
      'download a file (its newest available version), a whole study (--all) or what a manifest names ' +
        '(--manifest), checking each SHA-256; resumes partial downloads, and skips files already there',
    )
    .option('--version <versionId>', 'one file: a given version')
    .option('-o, --output <path>', 'one file: where to write it (default: its file name; - for stdout)')
    .option('--all', 'every file of the study with an available version')
    .option('--manifest <file>', "a study's manifest (JSON or TSV), or a list of drs:// URIs, one per line")
    .option('-d, --dir <dir>', '--all and --manifest: the directory to fill (default: the current one)', '.')
    .option('-j, --jobs <n>', '--all and --manifest: files downloaded at once (default 4)', jobs, 4)
    .action(async (study: string | undefined, file: string | undefined, opts, cmd: Command) => {
      const s = session(cmd);
      if (opts.all || opts.manifest) {
        if (opts.all && opts.manifest) throw new UsageError('--all and --manifest exclude each other');
        if (opts.all && (!study || file)) throw new UsageError('--all takes a study and no file');
        if (opts.manifest && study) throw new UsageError('--manifest takes no study or file');
        if (opts.version || opts.output) throw new UsageError('--version and -o are for one file');
        const api = await s.files();
        const r = await bulkDownload(
          api,
          { study, manifest: opts.manifest, dir: opts.dir, jobs: opts.jobs },
          s.o,
        );
        show(s.o, r, () => bulkSummary(r));
        if (r.failed.length)
          throw new CliError(
            `${r.failed.length} of ${r.files} files failed: ` +
              r.failed
                .slice(0, 3)
                .map((f) => f.name)
                .join(', ') +
              (r.failed.length > 3 ? ', …' : ''),
          );
        return;
      }
      if (!study || !file) throw new UsageError('give a study and a file, or --all, or --manifest');
      const api = await s.files();
      const r = await download(api, { study, file, version: opts.version, out: opts.output }, s.o);
      if (opts.output === '-') return;
      show(
        s.o,
        r,
        () =>
          `${r.path}: ${mib(r.size)}, version ${r.version_id}, SHA-256 ${r.sha256} checked` +
          (r.resumed_from ? ` (resumed at byte ${r.resumed_from})` : ''),
      );
    });

  program
    .command('signed-url <study> <file>')
    .description('a single-use download link that needs no token')
    .option('--version <versionId>', 'a given version')
    .action(async (study: string, file: string, opts, cmd: Command) => {
      const s = session(cmd);
      const api = await s.files();
      const r = opts.version
        ? await must(
            api.POST('/signed-url/study/{studyId}/files/{fileId}/version/{versionId}', {
              params: { path: { studyId: study, fileId: file, versionId: opts.version } },
              headers: creating(),
            }),
            'POST signed-url',
          )
        : await must(
            api.POST('/signed-url/study/{studyId}/files/{fileId}', {
              params: { path: { studyId: study, fileId: file } },
              headers: creating(),
            }),
            'POST signed-url',
          );
      show(s.o, r, () => `${r.url}\n(single use, expires ${r.expires_at})`);
    });
}
