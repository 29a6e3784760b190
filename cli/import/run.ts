import type { CoordinatorClient } from '../api.js';
import { creating, must } from '../http.js';
import { pagesOf, type SourceOptions } from './source.js';
import {
  type ImportReport,
  type ImportResult,
  newReport,
  RESOURCE_KEYS,
  type ResourceKey,
  record,
} from './tally.js';

/**
 * One `drc import` run: the original's lists in the order their references need (task services, studies, releases
 * with their tasks, release notes, events), each read a page at a time and sent to the coordinator's /import routes
 * in batches. Memory holds a page or two and the tallies, whatever the original's size. Nothing here decides what is
 * written: the coordinator answers one result per record (written, present, refused with a reason) and this adds
 * them up. A run cut off anywhere is finished by running it again: what was written is found present.
 */

export interface ImportOptions extends Omit<SourceOptions, 'base'> {
  from: string;
  dryRun: boolean;
  activeAs?: 'failed' | 'canceled';
  /** Batches sent at once (IN_FLIGHT). */
  inFlight?: number;
}

/**
 * Requests in flight at once. The records of one resource are independent, so a few batches overlap their reads,
 * lookups and round trips; each batch's writes are its own transactions (their counters retried on conflict).
 */
const IN_FLIGHT = 4;

/** At most `limit` tasks at once; the first failure is thrown by the next add() or drain(), after the rest end. */
class InFlight {
  private readonly running = new Set<Promise<void>>();
  private failure: unknown;
  constructor(private readonly limit: number) {}
  async add(task: () => Promise<void>): Promise<void> {
    this.check();
    const p: Promise<void> = task()
      .catch((err) => {
        this.failure ??= err;
      })
      .finally(() => this.running.delete(p));
    this.running.add(p);
    if (this.running.size >= this.limit) await Promise.race(this.running);
    this.check();
  }
  async drain(): Promise<void> {
    await Promise.all(this.running);
    this.check();
  }
  /** Waits for what is running, whatever it ends with (a run that stops still counts what was answered). */
  async settle(): Promise<void> {
    await Promise.all(this.running);
  }
  private check(): void {
    if (this.failure !== undefined) throw this.failure;
  }
}

/** Records per request: the routes' cap (100), and a body well under the APIs' 256 KiB. */
const BATCH_RECORDS = 100;
const BATCH_BYTES = 192 * 1024;

type Answer = { dry_run: boolean; results: ImportResult[] };

const COLLECTIONS: { collection: string; key: ResourceKey }[] = [
  { collection: 'task-services', key: 'task_service' },
  { collection: 'studies', key: 'study' },
  { collection: 'releases', key: 'release' },
  { collection: 'release-notes', key: 'release_note' },
  { collection: 'events', key: 'event' },
];

export interface Progress {
  /** A page of `collection` was read and sent: how far the list is, and the tallies answered so far. */
  page(key: ResourceKey, done: number, count: number, report: ImportReport): void;
  end(key: ResourceKey, report: ImportReport): void;
}

/** Batches of a page: at most BATCH_RECORDS records and about BATCH_BYTES of JSON each (a bigger record alone). */
export function batches(records: readonly unknown[]): unknown[][] {
  const out: unknown[][] = [];
  let current: unknown[] = [];
  let bytes = 0;
  for (const r of records) {
    const size = Buffer.byteLength(JSON.stringify(r) ?? 'null');
    if (current.length && (current.length >= BATCH_RECORDS || bytes + size > BATCH_BYTES)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(r);
    bytes += size + 1;
  }
  if (current.length) out.push(current);
  return out;
}

/** The id a reference names: a bare id, or the last segment of the original's absolute URL. */
const idIn = (ref: unknown): string | null =>
  typeof ref === 'string' && ref ? (ref.replace(/\/+$/, '').split('/').pop() ?? null) : null;

/**
 * A note or an event naming a release or task this run refused is refused here, before it is sent: the coordinator
 * would refuse it too (the record is not there), except in a dry run (where nothing is there yet) or when another
 * record holds the id (and this one must not land beside it).
 */
function refusedRef(raw: unknown, refused: ReadonlySet<string>): string | null {
  const r = raw as { release?: unknown; task?: unknown } | null;
  for (const [what, ref] of [
    ['release', r?.release],
    ['task', r?.task],
  ] as const) {
    const id = idIn(ref);
    if (id && refused.has(id)) return `its ${what} ${id} is refused by this run`;
  }
  return null;
}

function send(
  api: CoordinatorClient,
  key: ResourceKey,
  records: unknown[],
  o: ImportOptions,
): Promise<Answer> {
  const body = { records, dry_run: o.dryRun };
  switch (key) {
    case 'task_service':
      return must(api.POST('/import/task-services', { body }), 'POST /import/task-services');
    case 'study':
      return must(api.POST('/import/studies', { body }), 'POST /import/studies');
    case 'release': {
      const withActive = { ...body, ...(o.activeAs ? { active_as: o.activeAs } : {}) };
      return must(api.POST('/import/releases', { body: withActive }), 'POST /import/releases');
    }
    case 'release_note':
      return must(api.POST('/import/release-notes', { body }), 'POST /import/release-notes');
    default:
      return must(api.POST('/import/events', { body }), 'POST /import/events');
  }
}

/**
 * Runs the import; the report is filled as it goes, so a run that throws (the original or the coordinator stopped
 * answering) still says how far it got. A run that wrote something is recorded as one event (recordRun).
 */
export async function runImport(
  api: CoordinatorClient,
  o: ImportOptions,
  progress: Progress,
  report: ImportReport = newReport(o.from, o.dryRun, o.activeAs),
): Promise<ImportReport> {
  const source: SourceOptions = { ...o, base: o.from.replace(/\/+$/, '') };
  const flight = new InFlight(o.inFlight ?? IN_FLIGHT);
  try {
    await importAll(api, o, source, progress, report, flight);
  } catch (err) {
    await flight.settle();
    throw err;
  }
  report.outcome = 'completed';
  return report;
}

async function importAll(
  api: CoordinatorClient,
  o: ImportOptions,
  source: SourceOptions,
  progress: Progress,
  report: ImportReport,
  flight: InFlight,
): Promise<void> {
  const refusedIds = new Set<string>();
  for (const { collection, key } of COLLECTIONS) {
    let listed = 0;
    for await (const page of pagesOf(source, collection)) {
      for (const batch of batches(page.results)) {
        let toSend = batch;
        if (key === 'release_note' || key === 'event') {
          toSend = [];
          for (const raw of batch) {
            const why = refusedRef(raw, refusedIds);
            if (why)
              record(report, {
                resource: key,
                id: idIn((raw as { kf_id?: unknown })?.kf_id),
                outcome: 'refused',
                reason: why,
              });
            else toSend.push(raw);
          }
        }
        if (!toSend.length) continue;
        await flight.add(async () => {
          const answer = await send(api, key, toSend, o);
          for (const r of answer.results) {
            record(report, r);
            if (r.outcome === 'refused' && r.id && (r.resource === 'release' || r.resource === 'task'))
              refusedIds.add(r.id);
          }
        });
      }
      listed += page.results.length;
      progress.page(key, listed, page.count, report);
    }
    // A resource's records are all answered before the next resource's are sent: notes and events follow the
    // releases they name, and the refusals among those.
    await flight.drain();
    progress.end(key, report);
  }
}

/** The run's event (POST /import/runs), for a run that wrote something; its id goes into the report. */
export async function recordRun(api: CoordinatorClient, report: ImportReport): Promise<void> {
  const written = RESOURCE_KEYS.reduce((n, k) => n + report.totals[k].written, 0);
  if (report.dryRun || written === 0) return;
  const event = await must(
    api.POST('/import/runs', {
      body: {
        source: report.source,
        outcome: report.outcome === 'completed' ? 'completed' : 'stopped',
        ...(report.activeAs ? { active_as: report.activeAs } : {}),
        totals: report.totals,
      },
      headers: creating(),
    }),
    'POST /import/runs',
  );
  report.auditEvent = event.kf_id;
}
