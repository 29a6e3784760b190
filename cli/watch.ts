import cliProgress from 'cli-progress';
import type { CoordinatorClient, CoordinatorComponents } from './api.js';
import { must, nextQuery } from './http.js';
import type { Output } from './output.js';

type Release = CoordinatorComponents['schemas']['Release'];
type Event = CoordinatorComponents['schemas']['Event'];

/** Where `releases watch` stops: 0 for staged or published, 1 for failed or canceled. */
const ENDS: Record<string, number> = { staged: 0, published: 0, failed: 1, canceled: 1 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const eventLine = (e: Event) =>
  `${e.created_at}  ${e.event_type.padEnd(7)} ${e.message}${e.release ? `  [${e.release.split('/').pop()}]` : ''}`;

/**
 * Events newer than what `seen` holds, oldest first. Lists are newest first, so pages are read until one holds an
 * event already seen (or the list ends); the first call takes only the newest `backlog`.
 */
async function newEvents(
  api: CoordinatorClient,
  seen: Set<string>,
  filter: { release?: string },
  backlog: number,
  first: boolean,
): Promise<Event[]> {
  const fresh: Event[] = [];
  let query: Record<string, unknown> = {
    ...filter,
    limit: first ? Math.max(1, Math.min(backlog, 100)) : 100,
  };
  for (;;) {
    const page = await must(api.GET('/events', { params: { query } }), 'GET /events');
    let reachedSeen = false;
    for (const e of page.results) {
      if (seen.has(e.kf_id)) {
        reachedSeen = true;
        break;
      }
      fresh.push(e);
    }
    if (first || reachedSeen || !page.next) break;
    query = nextQuery(page.next)!;
  }
  for (const e of fresh) seen.add(e.kf_id);
  return (first ? fresh.slice(0, backlog) : fresh).reverse();
}

export interface TailOptions {
  release?: string;
  intervalMs: number;
  /** How many past events to show first. */
  backlog: number;
}

/** `drc events tail`: the newest events, then each new one as it arrives, until Ctrl-C. */
export async function tailEvents(api: CoordinatorClient, opts: TailOptions, o: Output): Promise<never> {
  const seen = new Set<string>();
  const filter = opts.release ? { release: opts.release } : {};
  for (let first = true; ; first = false) {
    if (!first) await sleep(opts.intervalMs);
    for (const e of await newEvents(api, seen, filter, opts.backlog, first))
      o.out(o.json ? JSON.stringify(e) : eventLine(e));
  }
}

export interface WatchOptions {
  intervalMs: number;
  /** Show the release's earlier events first; otherwise only what happens after the watch starts. */
  fromStart?: boolean;
}

export interface WatchSummary {
  type: 'summary';
  release: string;
  state: string;
  version: string;
  seconds: number;
  events: number;
  tasks: { id: string; service: string; state: string; progress: number }[];
}

/**
 * `drc releases watch`: the release's state, one progress bar per task (service name, state, progress) and each
 * event that happens after the watch starts (with `fromStart`, the release's earlier events first), until the
 * release is staged, published, failed or canceled; then a summary. In a pipe or with --json: one JSON line per
 * change (`release`, `task`, `event`) and a last `summary` line. Resolves to the exit status.
 *
 * The state and the tasks are shown as they are when the watch starts: that is the present, not history. Events
 * are history: without `fromStart`, the newest page of the release's events is read first and only marked as seen.
 */
export async function watchRelease(
  api: CoordinatorClient,
  id: string,
  opts: WatchOptions,
  o: Output,
  onStop: (stop: () => void) => void,
): Promise<number> {
  const started = Date.now();
  const seen = new Set<string>();
  let eventCount = 0;
  const lastTask = new Map<string, string>();
  let lastState = '';

  const multi = o.bars
    ? new cliProgress.MultiBar(
        {
          format: '{label} |{bar}| {value}% {state}',
          hideCursor: true,
          stream: process.stderr,
          clearOnComplete: false,
          autopadding: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  const header = multi?.create(100, 0, { label: `release ${id}`, state: '' }, { format: '{label}: {state}' });
  const bars = new Map<string, cliProgress.SingleBar>();
  onStop(() => multi?.stop());

  const line = (value: unknown) => o.out(JSON.stringify(value));
  if (!opts.fromStart) await newEvents(api, seen, { release: id }, 100, true);
  let release: Release;
  for (;;) {
    release = await must(api.GET('/releases/{id}', { params: { path: { id } } }), `GET /releases/${id}`);
    if (release.state !== lastState) {
      lastState = release.state;
      if (multi) header?.update(0, { label: `release ${id} (${release.name})`, state: release.state });
      else if (o.json) line({ type: 'release', id, state: release.state, version: release.version });
      else o.out(`release ${id}: ${release.state}`);
    }
    const width = Math.max(...release.tasks.map((t) => t.service_name.length), 8);
    for (const t of release.tasks) {
      const key = `${t.state} ${t.progress}`;
      if (lastTask.get(t.kf_id) === key) continue;
      lastTask.set(t.kf_id, key);
      if (multi) {
        const label = t.service_name.padEnd(width);
        const bar = bars.get(t.kf_id) ?? multi.create(100, 0, { label, state: t.state });
        bars.set(t.kf_id, bar);
        bar.update(t.progress, { label, state: t.state });
      } else if (o.json)
        line({ type: 'task', id: t.kf_id, service: t.service_name, state: t.state, progress: t.progress });
      else o.out(`  ${t.service_name}: ${t.state} ${t.progress}%`);
    }
    for (const e of await newEvents(api, seen, { release: id }, 100, false)) {
      eventCount++;
      if (multi) multi.log(`${eventLine(e)}\n`);
      else if (o.json) line({ type: 'event', ...e });
      else o.out(eventLine(e));
    }
    if (release.state in ENDS) break;
    await sleep(opts.intervalMs);
  }
  multi?.stop();
  const summary: WatchSummary = {
    type: 'summary',
    release: id,
    state: release.state,
    version: release.version,
    seconds: Math.round((Date.now() - started) / 100) / 10,
    events: eventCount,
    tasks: release.tasks.map((t) => ({
      id: t.kf_id,
      service: t.service_name,
      state: t.state,
      progress: t.progress,
    })),
  };
  if (o.json) line(summary);
  else
    o.out(
      `release ${id} ${release.state} (version ${release.version}) after ${summary.seconds} s: ` +
        `${summary.tasks.length} task(s) [${summary.tasks.map((t) => `${t.service} ${t.state}`).join(', ')}], ` +
        `${eventCount} event(s)`,
    );
  return ENDS[release.state];
}
