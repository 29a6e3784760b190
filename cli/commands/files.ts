import type { Command } from 'commander';
import type { FilesComponents } from '../api.js';
import { download } from '../download.js';
import { creating, listPages, must } from '../http.js';
import { type Column, mib, record, show, showList } from '../output.js';
import type { CommandContext } from '../session.js';
import { upload } from '../upload.js';
import { listOptions, pageQuery } from './options.js';

type FileRecord = FilesComponents['schemas']['File'];

const fileColumns: Column<FileRecord>[] = [
  { header: 'id', value: (f) => f.kf_id },
  { header: 'name', value: (f) => f.name },
  { header: 'created', value: (f) => f.created_at },
  { header: 'by', value: (f) => f.created_by },
];

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
    .command('upload <study> <path>')
    .description('upload a file to a study (multipart above the service threshold), with its SHA-256 checked')
    .option('--name <name>', 'display name (default: the file name)')
    .option('--description <text>', 'description')
    .option('--content-type <type>', 'media type')
    .option('--file <fileId>', 'upload a new version of this file instead of a new file')
    .option('--resume', 'continue an interrupted multipart upload of this file, sending only missing parts')
    .action(async (study: string, path: string, opts, cmd: Command) => {
      const s = session(cmd);
      const api = await s.files();
      const r = await upload(
        s.config,
        api,
        {
          study,
          path,
          name: opts.name,
          description: opts.description,
          contentType: opts.contentType,
          fileId: opts.file,
          resume: Boolean(opts.resume),
        },
        s.o,
      );
      show(
        s.o,
        r,
        () =>
          `${record(r.version as unknown as Record<string, unknown>, ['kf_id', 'file_name', 'size', 'sha256', 'state', 'study_id'])}\n` +
          `file ${r.file_id}: ${mib(r.version.size)} uploaded, SHA-256 checked` +
          (r.parts_resumed
            ? ` (${r.parts_resumed} part(s) from the interrupted upload, ${r.parts_sent} sent now)`
            : ''),
      );
    });
  files
    .command('download <study> <file>')
    .description(
      'download a file (its newest available version), checking its SHA-256; resumes a partial one',
    )
    .option('--version <versionId>', 'a given version')
    .option('-o, --output <path>', 'where to write it (default: its file name; - for stdout)')
    .action(async (study: string, file: string, opts, cmd: Command) => {
      const s = session(cmd);
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
