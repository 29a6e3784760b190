import { assertOffset, type Page } from '#functions/shared/list.js';
import * as z from '#functions/shared/zod.js';
import type { Counter } from './counters.js';
import { type Documents, QueryCommand, type QueryCommandInput } from './documents.js';

/**
 * What the DynamoDB repositories share: physical table names, the key layout of the single-table design, counters and
 * the transaction / paging plumbing. Nothing outside functions/adapters/dynamodb/ sees a key attribute.
 *
 * coordinator table (pk / sk; gsi1 lists one type newest first; gsi2 finds an item by its own id; gsi3 / gsi4 serve
 * the lists' filters). Every list sort key is `<created>#<id>` (listSk), newest first.
 *   task service   TS#<id>        / TS        gsi1 TS            gsi3 TS#EN#<true|false>            (enabled filter)
 *   credentials    TS#<id>        / CRED      no index keys: the service's signing secrets and created client (never
 *                                            read by a list; see functions/coordinator/service-credentials.ts)
 *   release        RE#<id>        / RE        gsi1 RE            gsi2 ACTIVE#RE (only while not terminal, below)
 *                                            gsi3 RE#ST#<state>                                    (state filter)
 *                                            + `noteIds`, so a page of releases finds its notes without a query
 *   wake latch     RE#<release>   / RE#L      the wake latch (waitToken, waitKind, wakePending, waitSeq: releases/
 *                                            latch.ts); no index keys, created by the first latch write
 *   task view      RE#<release>   / RE#V      `taskView`: every task as created (state, progress, service, name,
 *                                            created); written once, with the release (no index keys)
 *   view shard     RE#<release>   / RE#V#<g>  g = shardOf(task id, VIEW_SHARDS): the later states (`s:<task>`) and
 *                                            progress (`p:<task>`) of its group of tasks, how many of them are in
 *                                            each state (`n:<state>`, pending not counted) and the release's state
 *                                            (`phase`; absent until the release first moves, i.e. initializing),
 *                                            and `ev`: its share of the release's event count (SHARD.events).
 *                                            Created by the first write that needs it. A page of releases reads a
 *                                            view and its shards by key; a callback writes one shard, so the
 *                                            callbacks of one release meet only within a group
 *   task           RE#<release>   / TA#<id>   gsi1 TA   gsi2 <id> / TA   gsi3 TA#ST#<state>   gsi4 TA#TS#<service>
 *                                            `vgs`: how many tasks its view shard holds (a callback's completion check);
 *                                            `evn` / `evo`: its event counts (TASK_COUNTS)
 *   release note   RE#<release>   / RN#<id>   gsi1 RN   gsi2 <id> / RN   gsi3 RN#SD#<study>  (only with a study)
 *   note id claim  ID#<id>        / ID        (keeps note ids unique although notes live under their release)
 *   study member   RS#<study>     / <created>#<release>   (a release under each of its studies: ?study= lists)
 *   event          EV#<id>        / EV        gsi1 EV#<nn> (4 shards by id)   gsi2 EVR#<release>   gsi3 EVS#<service>
 *                                            gsi4 EVD#<study>   gsi5 EVTK#<release>#<task> (names a task and its
 *                                            release), or EVTO#<task> (names a task but no release)
 *   event key item EVRD#<release>#<study> / <created>#<event>   a copy of an event naming a release and a study
 *                                            (?release=&study=), written and deleted with the event
 *   version guard  VERSION#<v>    / VERSION   gsi1 VERSION / <sortable version>
 *   highest        VERSION        / HIGHEST   (the highest published version, moved in the publishing transaction)
 *   registry guard REGISTRY       / SERVICES  (servicesRev, releaseSeq: settles DELETE task service vs POST /releases;
 *                                            `tasks:<service>`: how many tasks each service was given, moved by the
 *                                            creating transaction, which already writes this item)
 *   gate's client  SCLIENT#<client id> / SCLIENT   a client the service-client gate made (service-client-records.ts);
 *                                            only the gate's role may write these keys (lib/capabilities.ts)
 *   counter        CNT#<name>#<nn> / CNT     n, or one attribute per count it holds (counters.ts; C for the names)
 *   creation       RE#<release>   / RE        `creating`: the release item of a release whose tasks are still being
 *                                            written (a release of more tasks than one transaction holds; creation.ts)
 *   schema         SCHEMA         / VERSION   the layout version the start-up migration brought the table to
 * studies table
 *   study          SD#<id>        / SD        gsi1 SD;  counter CNT#SD#00
 *
 * A release, its tasks and its notes share one partition (item collection). GET /releases/<id> reads the release
 * item, its task view with its shards and its notes (one Query over sk RE..RN~); the tasks come from the view, whose
 * shards every transaction that changes a task also updates (tasks never change anywhere else).
 *
 * The active index: a release item carries gsi2 keys (gsi2pk ACTIVE#RE) from its creation until the change that
 * makes it terminal (published, canceled, failed), which removes them in the same transaction. gsi2 is therefore a
 * sparse index of exactly the releases that still need driving, and the reconciler (every minute) and the health
 * check read that one partition instead of every release ever made: their cost follows active work, not history.
 * Its projection is the whole item, so the orchestration extras (generation, waitToken, wakePending) come with it.
 * One partition key is fine for the few hundred releases that can be in flight at once; shard the key
 * (ACTIVE#RE#<n>) if that ever grows past a partition's write rate.
 * Every id is written with attribute_not_exists and redrawn on collision. Task ids are checked within their (new)
 * release only: a per-task id claim would double the items of the creating transaction (capped at 100).
 */
export interface Tables {
  coordinator: string;
  studies: string;
}

const tableEnv = z.object({
  COORDINATOR_TABLE: z.optional(z.string().check(z.minLength(3))),
  STUDIES_TABLE: z.optional(z.string().check(z.minLength(3))),
});

/** Table names from the env, read once per container; a function that needs a table it was not given fails fast. */
export function tablesFromEnv(env: NodeJS.ProcessEnv = process.env): Tables {
  const parsed = tableEnv.parse(env);
  const need = (name: keyof typeof parsed): string => {
    const v = parsed[name];
    if (!v) throw new Error(`Invalid configuration: ${name} is required`);
    return v;
  };
  return {
    get coordinator() {
      return need('COORDINATOR_TABLE');
    },
    get studies() {
      return need('STUDIES_TABLE');
    },
  };
}

/** Shards of the all-events list (gsi1 EV#<nn>): see docs/architecture.md for the arithmetic. */
export const EVENT_LIST_SHARDS = 4;

/**
 * Shards of a release's task view (RE#V#<g>), by task id: the callbacks of a release's tasks write only their own
 * group's shard, so 50 callbacks at once meet in groups of about 6 instead of all on one item; a page of 10 releases
 * reads 10 views and their 80 shards in one BatchGetItem.
 */
export const VIEW_SHARDS = 8;

/**
 * The counter item that holds the counts every task callback moves (C.tasks, C.tasksInState, C.events) and the events
 * each service's callbacks reported (C.callbackEventsOfService). Its shards are SERVICE_GROUPS groups of GROUP_SHARDS:
 * a callback writes a shard of its service's group (callbackShard), so a service's count is read from that group's
 * shards alone, and the callbacks of one service from every release in flight spread over GROUP_SHARDS items, shared
 * with the few other services of the group, instead of meeting on one.
 */
export const TASKS_AND_EVENTS = 'TAEV';
export const SERVICE_GROUPS = 8;
export const GROUP_SHARDS = 8;
const TASKS_AND_EVENTS_SHARDS = SERVICE_GROUPS * GROUP_SHARDS;

/** The shard of TASKS_AND_EVENTS a callback about the task writes: one of its service's group, by the task id. */
export function callbackShard(serviceId: string, taskId: string): number {
  return shardOf(serviceId, SERVICE_GROUPS) * GROUP_SHARDS + shardOf(taskId, GROUP_SHARDS);
}

/** The shards of TASKS_AND_EVENTS that hold the service's callback events (its group). */
export function serviceGroupShards(serviceId: string): number[] {
  const first = shardOf(serviceId, SERVICE_GROUPS) * GROUP_SHARDS;
  return Array.from({ length: GROUP_SHARDS }, (_, i) => first + i);
}

/**
 * Counts kept on the task item, moved by every transaction that writes or deletes an event naming the task (which
 * writes the task item anyway, or does so for the count): the events naming the task and its release, and those
 * naming the task alone.
 */
export const TASK_COUNTS = { events: 'evn', onlyEvents: 'evo' } as const;

/** The partition keys of the gate's client records start so (lib/ grants the gate's role these keys only). */
export const SERVICE_CLIENT_RECORD_PREFIX = 'SCLIENT#';

export const K = {
  taskService: (id: string) => ({ pk: `TS#${id}`, sk: 'TS' }),
  servicesEnabled: (enabled: boolean) => `TS#EN#${enabled}`,
  releasesInState: (state: string) => `RE#ST#${state}`,
  releasesOfStudy: (studyId: string) => `RS#${studyId}`,
  tasksInState: (state: string) => `TA#ST#${state}`,
  tasksOfService: (serviceId: string) => `TA#TS#${serviceId}`,
  notesOfStudy: (studyId: string) => `RN#SD#${studyId}`,
  eventShard: (n: number) => `EV#${String(n).padStart(2, '0')}`,
  eventShards: () => Array.from({ length: EVENT_LIST_SHARDS }, (_, n) => K.eventShard(n)),
  /** gsi5: the events naming a task and its release; those naming the task alone. */
  eventsOfTask: (releaseId: string, taskId: string) => `EVTK#${releaseId}#${taskId}`,
  taskOnlyEvents: (taskId: string) => `EVTO#${taskId}`,
  /** The key items of the events naming a release and a study (base table, a partition per pair). */
  releaseStudyEventsPk: (releaseId: string, studyId: string) => `EVRD#${releaseId}#${studyId}`,
  eventsOfService: (serviceId: string) => `EVS#${serviceId}`,
  eventsOfStudy: (studyId: string) => `EVD#${studyId}`,
  /** The registry attribute counting the tasks a service was given. */
  serviceTaskCount: (serviceId: string) => `tasks:${serviceId}`,
  schema: () => ({ pk: 'SCHEMA', sk: 'VERSION' }),
  release: (id: string) => ({ pk: `RE#${id}`, sk: 'RE' }),
  /** The release's task view: its own item, so task changes never rewrite the indexed release item. */
  releaseView: (id: string) => ({ pk: `RE#${id}`, sk: 'RE#V' }),
  /** One shard of the release's task view (g < VIEW_SHARDS); the view and its shards share the prefix RE#V. */
  releaseViewShard: (id: string, g: number) => ({ pk: `RE#${id}`, sk: `RE#V#${g}` }),
  /** The release's wake latch (releases/latch.ts): its own item, so latch writes never rewrite the indexed release. */
  releaseLatch: (id: string) => ({ pk: `RE#${id}`, sk: 'RE#L' }),
  releasePk: (id: string) => `RE#${id}`,
  task: (releaseId: string, id: string) => ({ pk: `RE#${releaseId}`, sk: `TA#${id}` }),
  note: (releaseId: string, id: string) => ({ pk: `RE#${releaseId}`, sk: `RN#${id}` }),
  idClaim: (id: string) => ({ pk: `ID#${id}`, sk: 'ID' }),
  event: (id: string) => ({ pk: `EV#${id}`, sk: 'EV' }),
  eventsOfRelease: (releaseId: string) => `EVR#${releaseId}`,
  version: (v: string) => ({ pk: `VERSION#${v}`, sk: 'VERSION' }),
  highestVersion: () => ({ pk: 'VERSION', sk: 'HIGHEST' }),
  registry: () => ({ pk: 'REGISTRY', sk: 'SERVICES' }),
  /** A client the service-client gate made; SERVICE_CLIENT_RECORD_PREFIX is what IAM keys the gate's grant on. */
  serviceClientRecord: (clientId: string) => ({
    pk: `${SERVICE_CLIENT_RECORD_PREFIX}${clientId}`,
    sk: 'SCLIENT',
  }),
  /** gsi2 partition of the releases that are not terminal (see above). */
  ACTIVE_RELEASES: 'ACTIVE#RE',
  activeRelease: (createdAt: string, id: string) => ({ gsi2pk: 'ACTIVE#RE', gsi2sk: `${createdAt}#${id}` }),
  study: (id: string) => ({ pk: `SD#${id}`, sk: 'SD' }),
  /** Newest-first listing key: timestamps sort lexically; the id breaks ties. */
  listSk: (createdAt: string | null, id: string) => `${createdAt ?? ''}#${id}`,
};

export const KEY_ATTRIBUTES = [
  'pk',
  'sk',
  'gsi1pk',
  'gsi1sk',
  'gsi2pk',
  'gsi2sk',
  'gsi3pk',
  'gsi3sk',
  'gsi4pk',
  'gsi4sk',
  'gsi5pk',
  'gsi5sk',
] as const;

/**
 * The coordinator's counters. Shards follow the write rate each must absorb (docs/architecture.md, Scale): the counts
 * every task callback moves (all events, the tasks in each state, its service's events) share one item of 64 shards,
 * a service's other events come from the rounds of every release in flight, the rest change at the pace of releases. Some counts are not
 * counter items but attributes of items their writers write anyway (docs/architecture.md, Counters): a task's events
 * (TASK_COUNTS on the task item), a release's events (SHARD.events on its view shards) and the tasks a service was
 * given (the registry's `tasks:<service>`).
 */
export const C = {
  taskServices: { name: 'TS', shards: 1 },
  servicesEnabled: (enabled: boolean) => ({ name: `TS#EN#${enabled}`, shards: 1 }),
  releases: { name: 'RE', shards: 1 },
  releasesInState: (state: string) => ({ name: `RE#ST#${state}`, shards: 4 }),
  releasesOfStudy: (studyId: string) => ({ name: `RE#SD#${studyId}`, shards: 1 }),
  // Every task callback moves two task-state counts, the all-events count and its service's: one item
  // (TASKS_AND_EVENTS) holds them all, so a callback writes it once, and the callbacks of every release in flight meet
  // on its 64 shards, those of one service on the 8 of its group (callbackShard).
  tasks: { name: TASKS_AND_EVENTS, attr: 'ta', shards: TASKS_AND_EVENTS_SHARDS },
  tasksInState: (state: string) => ({
    name: TASKS_AND_EVENTS,
    attr: `st:${state}`,
    shards: TASKS_AND_EVENTS_SHARDS,
  }),
  events: { name: TASKS_AND_EVENTS, attr: 'ev', shards: TASKS_AND_EVENTS_SHARDS },
  // The events a service's callbacks reported, on the shards of its group only (serviceGroupShards).
  callbackEventsOfService: (serviceId: string) => ({
    name: TASKS_AND_EVENTS,
    attr: `ts:${serviceId}`,
    shards: TASKS_AND_EVENTS_SHARDS,
  }),
  notes: { name: 'RN', shards: 1 },
  notesOfStudy: (studyId: string) => ({ name: `RN#SD#${studyId}`, shards: 1 }),
  // A service's events from everything but its callbacks (those count in callbackEventsOfService): the rounds of
  // every release in flight write them together.
  eventsOfService: (serviceId: string) => ({ name: `EV#TS#${serviceId}`, shards: 8 }),
  eventsOfStudy: (studyId: string) => ({ name: `EV#SD#${studyId}`, shards: 1 }),
  eventsOfReleaseStudy: (releaseId: string, studyId: string) => ({
    name: `EV#RD#${releaseId}#${studyId}`,
    shards: 1,
  }),
  studies: { name: 'SD', shards: 1 },
} satisfies Record<string, Counter | ((...x: never[]) => Counter)>;

export function stripKeys(item: Record<string, unknown>): Record<string, unknown> {
  const out = { ...item };
  for (const k of KEY_ATTRIBUTES) delete out[k];
  return out;
}

export {
  batchGetItems,
  COUNT_ATTRIBUTE,
  type Counter,
  CounterDeltas,
  counterKey,
  counterKeys,
  readCount,
  readCounts,
  sumCount,
} from './counters.js';
export {
  backoff,
  type FailedCondition,
  type LabelledItem,
  putNew,
  type TransactOutcome,
  transact,
} from './transact.js';

export type IndexName = 'gsi1' | 'gsi2' | 'gsi3' | 'gsi4' | 'gsi5';

/** Where a list reads: one partition of the table or of an index, or several (the shards of one list). */
export interface Partitions {
  table: string;
  index?: IndexName;
  keys: readonly string[];
}

const keyAttrs = (index?: IndexName) =>
  index ? { pk: `${index}pk`, sk: `${index}sk` } : { pk: 'pk', sk: 'sk' };

/** One partition read in sort-key order, a page at a time, for the k-way merge below. */
class PartitionStream {
  private buffer: Record<string, unknown>[] = [];
  private start: Record<string, unknown> | undefined;
  private done = false;
  constructor(
    private readonly doc: Documents,
    private readonly input: QueryCommandInput,
    private readonly chunk: number,
  ) {}
  async head(): Promise<Record<string, unknown> | undefined> {
    while (this.buffer.length === 0 && !this.done) {
      const out = await this.doc.send(
        new QueryCommand({ ...this.input, Limit: this.chunk, ExclusiveStartKey: this.start }),
      );
      this.buffer = (out.Items ?? []) as Record<string, unknown>[];
      this.start = out.LastEvaluatedKey;
      this.done = !this.start;
    }
    return this.buffer[0];
  }
  shift(): void {
    this.buffer.shift();
  }
}

/**
 * One page of a newest-first list kept in one or more partitions (a sharded list is merged by sort key, which is
 * `<created>#<id>` and unique). With a cursor the page is read from its position: each partition gives at most
 * `limit` items. Without one, `offset` items are skipped first (at most MAX_OFFSET, assertOffset), reading in chunks
 * sized to the share of each partition. No filter expression: a list is exactly its partitions. Records the page's
 * first and last sort keys in `page.seen` for the envelope's cursors.
 */
export async function pageOf(
  doc: Documents,
  src: Partitions,
  page: Page,
): Promise<Record<string, unknown>[]> {
  assertOffset(page);
  const { pk, sk } = keyAttrs(src.index);
  const cursor = page.cursor;
  const forward = cursor !== undefined && 'before' in cursor;
  const skip = cursor ? 0 : page.offset;
  const need = skip + page.limit;
  const chunk = cursor ? page.limit : Math.min(need, Math.ceil(need / src.keys.length) + page.limit);
  const streams = src.keys.map(
    (key) =>
      new PartitionStream(
        doc,
        {
          TableName: src.table,
          IndexName: src.index,
          KeyConditionExpression: cursor ? `#pk = :pk AND #sk ${forward ? '>' : '<'} :at` : '#pk = :pk',
          ExpressionAttributeNames: cursor ? { '#pk': pk, '#sk': sk } : { '#pk': pk },
          ExpressionAttributeValues: {
            ':pk': key,
            ...(cursor ? { ':at': 'after' in cursor ? cursor.after : cursor.before } : {}),
          },
          ScanIndexForward: forward,
        },
        chunk,
      ),
  );
  const out: Record<string, unknown>[] = [];
  let skipped = 0;
  while (out.length < page.limit) {
    const heads = await Promise.all(streams.map((s) => s.head()));
    let best = -1;
    for (let i = 0; i < heads.length; i++) {
      const h = heads[i];
      if (!h) continue;
      if (best < 0) best = i;
      else {
        const a = String(h[sk]);
        const b = String(heads[best]?.[sk]);
        if (forward ? a < b : a > b) best = i;
      }
    }
    if (best < 0) break;
    const item = heads[best] as Record<string, unknown>;
    streams[best].shift();
    if (skipped < skip) skipped++;
    else out.push(item);
  }
  if (forward) out.reverse();
  page.seen = out.length ? { first: String(out[0][sk]), last: String(out[out.length - 1][sk]) } : undefined;
  return out;
}

/**
 * A page of a list held in memory (a bounded set: the tasks, notes or events of one release), given newest first
 * with each item's sort key. Same cursor and offset rules as pageOf.
 */
export function pageInMemory<T>(sorted: readonly { sk: string; value: T }[], page: Page): T[] {
  assertOffset(page);
  const cursor = page.cursor;
  let slice: { sk: string; value: T }[];
  if (!cursor) slice = sorted.slice(page.offset, page.offset + page.limit);
  else if ('after' in cursor) slice = sorted.filter((x) => x.sk < cursor.after).slice(0, page.limit);
  else slice = sorted.filter((x) => x.sk > cursor.before).slice(-page.limit);
  page.seen = slice.length ? { first: slice[0].sk, last: slice[slice.length - 1].sk } : undefined;
  return slice.map((x) => x.value);
}

/** Newest first by `<created>#<id>` sort keys. */
export const bySkDesc = (a: { sk: string }, b: { sk: string }) => (a.sk < b.sk ? 1 : a.sk > b.sk ? -1 : 0);

/** A small stable hash of an id, for choosing the shard of a sharded list. */
export function shardOf(id: string, shards: number): number {
  let h = 0;
  for (let i = 0; i < id.length; i++) h = (h * 31 + id.charCodeAt(i)) >>> 0;
  return h % shards;
}

/** Reads every item of a query (all pages). */
export async function queryAll(
  doc: Documents,
  input: Omit<QueryCommandInput, 'ExclusiveStartKey'>,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await doc.send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
    items.push(...((out.Items ?? []) as Record<string, unknown>[]));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

/** Re-validates an item read back from DynamoDB (never a cast); a bad item is a server fault, not a 4xx. */
export function decode<S extends z.core.$ZodType>(schema: S, item: Record<string, unknown>): z.output<S> {
  const result = z.safeParse(schema, stripKeys(item));
  if (!result.success) {
    throw new Error(
      `Stored item ${String(item.pk)}/${String(item.sk)} does not match its schema: ${result.error.message}`,
    );
  }
  return result.data;
}
