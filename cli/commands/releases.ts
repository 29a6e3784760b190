import type { Command } from 'commander';
import type { CoordinatorComponents } from '../api.js';
import { CliError } from '../config.js';
import { creating, listPages, must } from '../http.js';
import { type Column, record, show, showList, table } from '../output.js';
import type { CommandContext } from '../session.js';
import { watchRelease } from '../watch.js';
import { listOptions, pageQuery, watchInterval } from './options.js';

type Release = CoordinatorComponents['schemas']['Release'];

const releaseColumns: Column<Release>[] = [
  { header: 'id', value: (r) => r.kf_id },
  { header: 'name', value: (r) => r.name },
  { header: 'state', value: (r) => r.state },
  { header: 'version', value: (r) => r.version },
  { header: 'studies', value: (r) => r.studies },
  { header: 'created', value: (r) => r.created_at },
];

const showRelease = (r: Release) =>
  `${record(r as unknown as Record<string, unknown>, ['kf_id', 'name', 'description', 'state', 'version', 'studies', 'author', 'is_major', 'tags', 'created_at'])}\n` +
  (r.tasks.length
    ? table(r.tasks, [
        { header: 'task', value: (t) => t.kf_id },
        { header: 'service', value: (t) => t.service_name },
        { header: 'state', value: (t) => t.state },
        { header: 'progress', value: (t) => `${t.progress}%` },
      ])
    : 'no tasks');

/** `drc releases …`: create, follow, publish and cancel data releases. */
export function addReleaseCommands(program: Command, { session, setExit, hooks }: CommandContext): void {
  const releases = program.command('releases').description('data releases');
  listOptions(releases.command('ls').description('list releases'))
    .option('--state <state>', 'only releases in this state')
    .option('--study <id>', 'only releases of this study')
    .action(async (opts, cmd: Command) => {
      const s = session(cmd);
      const api = await s.coordinator();
      const first = {
        ...pageQuery(opts),
        ...(opts.state ? { state: opts.state } : {}),
        ...(opts.study ? { study: opts.study } : {}),
      };
      const page = await listPages(
        first,
        (query) => must(api.GET('/releases', { params: { query } }), 'GET /releases'),
        Boolean(opts.all),
      );
      showList(s.o, page, releaseColumns);
    });
  releases
    .command('show <id>')
    .description('a release with its tasks')
    .action(async (id: string, _opts, cmd: Command) => {
      const s = session(cmd);
      const api = await s.coordinator();
      const r = await must(api.GET('/releases/{id}', { params: { path: { id } } }), `GET /releases/${id}`);
      show(s.o, r, () => showRelease(r));
    });
  watchInterval(
    releases
      .command('create')
      .description('create a release over studies (and with --watch, watch it)')
      .requiredOption('--name <name>', 'release name')
      .requiredOption('--study <id...>', 'study ids (at least one)')
      .option('--description <text>', 'description')
      .option('--author <name>', 'author (default: your token subject)')
      .option('--tag <tag...>', 'tags')
      .option('--major', 'a major release (the next major version when published)')
      .option('--watch', 'then watch it, as `drc releases watch`'),
  ).action(async (opts, cmd: Command) => {
    const s = session(cmd);
    const api = await s.coordinator();
    const r = await must(
      api.POST('/releases', {
        body: {
          name: opts.name,
          studies: opts.study,
          ...(opts.description !== undefined ? { description: opts.description } : {}),
          ...(opts.author ? { author: opts.author } : {}),
          ...(opts.tag ? { tags: opts.tag } : {}),
          ...(opts.major ? { is_major: true } : {}),
        },
        headers: creating(),
      }),
      'POST /releases',
    );
    if (!opts.watch) {
      show(s.o, r, () => showRelease(r));
      return;
    }
    if (s.o.json) s.o.out(JSON.stringify({ type: 'created', release: r }));
    else s.o.out(`created release ${r.kf_id} (${r.tasks.length} task(s))`);
    // A release created just now: every one of its events happens during this watch.
    setExit(
      await watchRelease(api, r.kf_id, { intervalMs: opts.interval * 1000, fromStart: true }, s.o, (stop) =>
        hooks.onInterrupt?.(stop),
      ),
    );
  });
  watchInterval(
    releases
      .command('watch <id>')
      .description(
        'live progress of a release until it is staged, published, failed or canceled: its state, its tasks and the events that happen from now on',
      )
      .option('--from-start', "show the release's earlier events first"),
  ).action(async (id: string, opts, cmd: Command) => {
    const s = session(cmd);
    const api = await s.coordinator();
    setExit(
      await watchRelease(
        api,
        id,
        { intervalMs: opts.interval * 1000, fromStart: Boolean(opts.fromStart) },
        s.o,
        (stop) => hooks.onInterrupt?.(stop),
      ),
    );
  });
  releases
    .command('publish <id>')
    .description(
      'publish a staged release; --retry sends publish again to the unpublished tasks of a stuck one',
    )
    .option(
      '--retry',
      'the release is publishing and stuck: send publish again to each task that has not published (and no other)',
    )
    .action(async (id: string, opts, cmd: Command) => {
      const s = session(cmd);
      const api = await s.coordinator();
      const r = await must(
        api.POST('/releases/{id}/publish', {
          params: { path: { id } },
          ...(opts.retry ? { body: { retry: true } } : {}),
        }),
        `POST /releases/${id}/publish`,
      );
      const sent = (r.tasks ?? []).map((t) => `  ${t.task_id}  ${t.service_name} (${t.task_service_id})`);
      show(s.o, r, () => [r.message, ...sent].join('\n'));
    });
  releases
    .command('cancel <id>')
    .description('cancel a release (one that is publishing needs --confirm-published)')
    .option(
      '--confirm-published',
      'cancel even though the release is publishing: services that already published are asked to discard it',
    )
    .action(async (id: string, opts, cmd: Command) => {
      const s = session(cmd);
      const api = await s.coordinator();
      const query = opts.confirmPublished ? { confirm_published: 'true' as const } : {};
      const call = api.DELETE('/releases/{id}', { params: { path: { id }, query } });
      const answer = await call.catch(() => undefined);
      const refusal = answer?.response.status === 409 ? answer.error?.error : undefined;
      if (refusal?.code === 'confirmation_required') {
        // Say what the confirmation would undo, and how to give it here (the API's message names the query flag).
        const published = (refusal.published ?? []).map((t) => `${t.task_id} (${t.service_name})`);
        throw new CliError(
          `release ${id} is publishing; ${published.length ? `already published: ${published.join(', ')}` : 'no task has published yet'}. ` +
            'Canceling asks every task service to cancel, and those that published to discard it; ' +
            'run again with --confirm-published to cancel anyway (HTTP 409)',
        );
      }
      const r = await must(call, `DELETE /releases/${id}`);
      show(s.o, r, () => showRelease(r));
    });
}
