import type { Command } from 'commander';
import type { CoordinatorComponents } from '../api.js';
import { listPages, must } from '../http.js';
import { type Column, showList } from '../output.js';
import type { CommandContext } from '../session.js';
import { listOptions, pageQuery } from './options.js';

type Study = CoordinatorComponents['schemas']['Study'];

const studyColumns: Column<Study>[] = [
  { header: 'id', value: (s) => s.kf_id },
  { header: 'name', value: (s) => s.name },
  { header: 'version', value: (s) => s.version },
  { header: 'visible', value: (s) => s.visible },
  { header: 'last published', value: (s) => s.last_pub_version },
];

/** `drc studies …`: the studies the coordinator mirrors from the study source. */
export function addStudyCommands(program: Command, { session }: CommandContext): void {
  const studies = program.command('studies').description('the studies the coordinator mirrors');
  listOptions(studies.command('ls').description('list studies')).action(async (opts, cmd: Command) => {
    const s = session(cmd);
    const api = await s.coordinator();
    const page = await listPages(
      pageQuery(opts),
      (query) => must(api.GET('/studies', { params: { query } }), 'GET /studies'),
      Boolean(opts.all),
    );
    showList(s.o, page, studyColumns);
  });
}
