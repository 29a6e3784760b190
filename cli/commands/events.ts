import type { Command } from 'commander';
import type { CoordinatorComponents } from '../api.js';
import { listPages, must } from '../http.js';
import { type Column, showList } from '../output.js';
import type { CommandContext } from '../session.js';
import { tailEvents } from '../watch.js';
import { listOptions, pageQuery, positiveInt, watchInterval } from './options.js';

type Event = CoordinatorComponents['schemas']['Event'];

const eventColumns: Column<Event>[] = [
  { header: 'created', value: (e) => e.created_at },
  { header: 'type', value: (e) => e.event_type },
  { header: 'message', value: (e) => e.message },
  { header: 'release', value: (e) => e.release?.split('/').pop() },
];

/** `drc events …`: the coordinator's event log, listed or followed. */
export function addEventCommands(program: Command, { session }: CommandContext): void {
  const events = program.command('events').description('the event log');
  listOptions(events.command('ls').description('list events, newest first'))
    .option('--release <id>', "only this release's events")
    .option('--study <id>', "only this study's events")
    .action(async (opts, cmd: Command) => {
      const s = session(cmd);
      const api = await s.coordinator();
      const first = {
        ...pageQuery(opts),
        ...(opts.release ? { release: opts.release } : {}),
        ...(opts.study ? { study: opts.study } : {}),
      };
      const page = await listPages(
        first,
        (query) => must(api.GET('/events', { params: { query } }), 'GET /events'),
        Boolean(opts.all),
      );
      showList(s.o, page, eventColumns);
    });
  watchInterval(
    events
      .command('tail')
      .description('the newest events, then each new one as it arrives (Ctrl-C stops)')
      .option('--release <id>', "only this release's events")
      .option('--backlog <n>', 'how many past events to show first (default 10)', positiveInt, 10),
  ).action(async (opts, cmd: Command) => {
    const s = session(cmd);
    const api = await s.coordinator();
    await tailEvents(
      api,
      { release: opts.release, intervalMs: opts.interval * 1000, backlog: opts.backlog },
      s.o,
    );
  });
}
