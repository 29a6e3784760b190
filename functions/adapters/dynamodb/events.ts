import { type CoordinatorEvent, eventSchema, type NewEvent } from '#functions/coordinator/model.js';
import type { EventFilters, EventRepository, Paged } from '#functions/coordinator/ports.js';
import { type Clock, nowIso, systemClock } from '#functions/shared/clock.js';
import { ValidationError } from '#functions/shared/errors.js';
import { newId } from '#functions/shared/ids.js';
import type { Page } from '#functions/shared/list.js';
import {
  bySkDesc,
  C,
  type Counter,
  CounterDeltas,
  decode,
  EVENT_LIST_SHARDS,
  K,
  type LabelledItem,
  type Partitions,
  pageInMemory,
  pageOf,
  putNew,
  queryAll,
  readCounts,
  shardOf,
  type Tables,
  transact,
  VIEW_SHARDS,
} from './common.js';
import { type Documents, GetCommand, QueryCommand } from './documents.js';
import {
  eventFolds,
  foldItems,
  releaseEventCount,
  serviceEventCount,
  taskEventCounts,
} from './event-counts.js';

/** Completes a NewEvent with a fresh id and its timestamp. */
export function materializeEvent(e: NewEvent, clock: Clock): CoordinatorEvent {
  return {
    id: newId('EV'),
    eventType: e.eventType,
    message: e.message,
    releaseId: e.releaseId ?? null,
    taskId: e.taskId ?? null,
    taskServiceId: e.taskServiceId ?? null,
    studyId: e.studyId ?? null,
    source: e.source ?? 'coordinator',
    createdAt: nowIso(clock),
  };
}

/**
 * The stored form of an event (key layout in common.ts). An event naming a task is in gsi5: beside the other events
 * of its task and release, or, naming the task but no release, beside the other such events of the task.
 * `taskReleaseId` (the release of the task of such an event) is kept on the item.
 */
export function eventItem(e: CoordinatorEvent, taskReleaseId?: string): Record<string, unknown> {
  const sk = K.listSk(e.createdAt, e.id);
  const task = e.taskId
    ? e.releaseId
      ? K.eventsOfTask(e.releaseId, e.taskId)
      : K.taskOnlyEvents(e.taskId)
    : null;
  return {
    ...K.event(e.id),
    gsi1pk: K.eventShard(shardOf(e.id, EVENT_LIST_SHARDS)),
    gsi1sk: sk,
    ...(e.releaseId ? { gsi2pk: K.eventsOfRelease(e.releaseId), gsi2sk: sk } : {}),
    ...(e.taskServiceId ? { gsi3pk: K.eventsOfService(e.taskServiceId), gsi3sk: sk } : {}),
    ...(e.studyId ? { gsi4pk: K.eventsOfStudy(e.studyId), gsi4sk: sk } : {}),
    ...(task ? { gsi5pk: task, gsi5sk: sk } : {}),
    ...(taskReleaseId && !e.releaseId ? { taskReleaseId } : {}),
    ...e,
  };
}

/**
 * The key item of an event naming a release and a study: a copy of the event in the pair's own partition, so that
 * `?release=&study=` pages by key. Events never change, so the copy cannot drift; it is written and deleted in the
 * event's own transactions. Null for any other event.
 */
export function eventKeyItem(e: CoordinatorEvent): Record<string, unknown> | null {
  if (!e.releaseId || !e.studyId) return null;
  return { pk: K.releaseStudyEventsPk(e.releaseId, e.studyId), sk: K.listSk(e.createdAt, e.id), ...e };
}

/**
 * The counter items an event is counted in. The other lists that hold it count it on items their writers write
 * anyway (eventFolds): the release's events on a view shard, the task's on the task item. A task callback counts the
 * service's events itself, on its shard of the callbacks' counter item (`serviceCounted`: C.callbackEventsOfService).
 */
export function eventCounters(e: CoordinatorEvent, opts: { serviceCounted?: boolean } = {}): Counter[] {
  const out: Counter[] = [C.events];
  if (e.taskServiceId && !opts.serviceCounted) out.push(C.eventsOfService(e.taskServiceId));
  if (e.studyId) out.push(C.eventsOfStudy(e.studyId));
  if (e.releaseId && e.studyId) out.push(C.eventsOfReleaseStudy(e.releaseId, e.studyId));
  return out;
}

/** What an event adds to (sign 1) or takes from (sign -1) the counts of its counter items (eventCounters). */
export function eventCounts(
  deltas: CounterDeltas,
  e: CoordinatorEvent,
  sign: 1 | -1,
  opts: { serviceCounted?: boolean } = {},
): CounterDeltas {
  for (const c of eventCounters(e, opts)) deltas.add(c, sign);
  return deltas;
}

/** The Put of one event (and of its key item, if it has one), for any transaction; counts go into `deltas`. */
export function eventPuts(table: string, e: CoordinatorEvent, taskReleaseId?: string): LabelledItem[] {
  const key = eventKeyItem(e);
  return [
    putNew(table, 'event', e.id, eventItem(e, taskReleaseId)),
    ...(key ? [putNew(table, 'event', e.id, key)] : []),
  ];
}

const matches = (e: CoordinatorEvent, f: EventFilters) =>
  (!f.releaseId || e.releaseId === f.releaseId) &&
  (!f.taskId || e.taskId === f.taskId) &&
  (!f.taskServiceId || e.taskServiceId === f.taskServiceId) &&
  (!f.studyId || e.studyId === f.studyId);

export class DynamoEventRepository implements EventRepository {
  constructor(
    private readonly doc: Documents,
    private readonly tables: Tables,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * One TransactWriteItems: the event Put, its counts, plus a check per referenced record, so a reference to a
   * missing record is refused without a separate read. The task is checked by the Update that moves its event count
   * (attribute_exists), under its release, so the caller must pass the task's release id (`taskReleaseId`) - the use
   * case resolves it when the request names only the task. The release's count moves on one of its view shards.
   */
  async create(e: NewEvent, refs: { taskReleaseId?: string } = {}): Promise<CoordinatorEvent> {
    const t = this.tables;
    const checks: LabelledItem[] = [];
    const check = (kind: string, id: string, table: string, key: Record<string, string>): void => {
      checks.push({
        kind,
        id,
        item: { ConditionCheck: { TableName: table, Key: key, ConditionExpression: 'attribute_exists(pk)' } },
      });
    };
    if (e.releaseId) check('release', e.releaseId, t.coordinator, K.release(e.releaseId));
    if (e.taskServiceId)
      check('task_service', e.taskServiceId, t.coordinator, K.taskService(e.taskServiceId));
    if (e.studyId) check('study', e.studyId, t.studies, K.study(e.studyId));
    for (let attempt = 0; attempt < 5; attempt++) {
      const event = materializeEvent(e, this.clock);
      const counts = eventCounts(new CounterDeltas(), event, 1).items(t.coordinator);
      // A task named without its release (or with another release) is looked for under the release given.
      const folds = eventFolds(event, refs.taskReleaseId ?? (e.taskId && !e.releaseId ? '-' : undefined));
      const out = await transact(this.doc, [
        ...eventPuts(t.coordinator, event, refs.taskReleaseId),
        ...counts,
        ...foldItems(t.coordinator, folds, 1, shardOf(event.id, VIEW_SHARDS)),
        ...checks,
      ]);
      if (out.ok) return event;
      const missing = out.conditionFailed.filter((f) => f.kind !== 'event');
      if (missing.length) {
        const fields = Object.fromEntries(missing.map((m) => [m.kind, [`${m.id} does not exist`]]));
        throw new ValidationError(`Invalid ${Object.keys(fields).join(', ')}`, fields);
      }
      // Only the id collided: try a fresh one.
    }
    throw new Error('could not allocate an event id');
  }

  async get(id: string): Promise<CoordinatorEvent | null> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tables.coordinator, Key: K.event(id) }));
    return out.Item ? decode(eventSchema, out.Item) : null;
  }

  /**
   * The delete and the counts it takes back, in one transaction conditioned on the event still being there. The
   * task's count goes back on the task item; a task that is gone (tasks are never deleted: a guard, not a path) takes
   * nothing back.
   */
  async delete(id: string): Promise<boolean> {
    const table = this.tables.coordinator;
    let withTask = true;
    for (let attempt = 0; attempt < 4; attempt++) {
      const raw = (
        await this.doc.send(new GetCommand({ TableName: table, Key: K.event(id), ConsistentRead: true }))
      ).Item;
      if (!raw) return false;
      const event = decode(eventSchema, raw);
      const key = eventKeyItem(event);
      const taskRelease = typeof raw.taskReleaseId === 'string' ? raw.taskReleaseId : undefined;
      const folds = eventFolds(event, taskRelease);
      if (!withTask) delete folds.task;
      const out = await transact(this.doc, [
        {
          kind: 'event',
          id,
          item: {
            Delete: { TableName: table, Key: K.event(id), ConditionExpression: 'attribute_exists(pk)' },
          },
        },
        ...(key
          ? [
              {
                kind: 'event_key',
                id,
                item: { Delete: { TableName: table, Key: { pk: key.pk, sk: key.sk } } },
              },
            ]
          : []),
        ...eventCounts(new CounterDeltas(), event, -1).items(table),
        ...foldItems(table, folds, -1, shardOf(event.id, VIEW_SHARDS)),
      ]);
      if (out.ok) return true;
      if (out.conditionFailed.some((f) => f.kind === 'task')) withTask = false;
    }
    return false;
  }

  /**
   * Deletes up to `limit` events written before `before` (ISO 8601), oldest first, each through `delete` so its
   * counts go with it; answers the ids deleted. Reads the shards of the newest-first list (gsi1) from their old end.
   */
  async expireBefore(before: string, limit: number): Promise<string[]> {
    const pages = await Promise.all(
      K.eventShards().map((shard) =>
        this.doc.send(
          new QueryCommand({
            TableName: this.tables.coordinator,
            IndexName: 'gsi1',
            KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk < :before',
            ExpressionAttributeValues: { ':pk': shard, ':before': before },
            ScanIndexForward: true,
            Limit: limit,
          }),
        ),
      ),
    );
    const oldest = pages
      .flatMap((p) => (p.Items ?? []) as Record<string, unknown>[])
      .sort((a, b) => String(a.gsi1sk).localeCompare(String(b.gsi1sk)))
      .slice(0, limit);
    const deleted: string[] = [];
    for (const item of oldest) if (await this.delete(String(item.id))) deleted.push(String(item.id));
    return deleted;
  }

  /**
   * Every filter is served by keys (docs/architecture.md lists each combination), each with its counter:
   * - none: the 4 shards of gsi1, merged newest first; release / task_service / study alone: their own partition;
   * - task (with or without release): gsi5, the task's own partitions (with release, only the events naming it);
   * - release and study: the pair's key items;
   * - a third filter on top of those: the narrowest of them, filtered and counted in memory, bounded by one task's
   *   events or one release's events of one study; release with task_service: the release's events, in memory;
   * - task_service and study together (neither release nor task): a 400, since no key holds both.
   */
  async list(filters: EventFilters, page: Page): Promise<Paged<CoordinatorEvent>> {
    const table = this.tables.coordinator;
    const f = filters;
    let src: Partitions;
    let count: () => Promise<number>;
    let narrowed: boolean;
    if (f.taskId) {
      const taskId = f.taskId;
      if (f.releaseId) {
        const releaseId = f.releaseId;
        src = { table, index: 'gsi5', keys: [K.eventsOfTask(releaseId, taskId)] };
        count = async () => taskEventCounts(await this.taskItem(releaseId, taskId)).events;
      } else {
        // The task's release names its partition (a task id is unique); a task that does not exist has no events.
        const releaseId = await this.releaseOfTask(taskId);
        if (!releaseId) return { count: 0, items: pageInMemory([], page) };
        src = { table, index: 'gsi5', keys: [K.eventsOfTask(releaseId, taskId), K.taskOnlyEvents(taskId)] };
        count = async () => {
          const n = taskEventCounts(await this.taskItem(releaseId, taskId));
          return n.events + n.only;
        };
      }
      narrowed = Boolean(f.taskServiceId || f.studyId);
    } else if (f.releaseId && f.studyId) {
      src = { table, keys: [K.releaseStudyEventsPk(f.releaseId, f.studyId)] };
      count = this.counted([C.eventsOfReleaseStudy(f.releaseId, f.studyId)]);
      narrowed = Boolean(f.taskServiceId);
    } else if (f.releaseId) {
      const releaseId = f.releaseId;
      src = { table, index: 'gsi2', keys: [K.eventsOfRelease(releaseId)] };
      count = () => releaseEventCount(this.doc, table, releaseId);
      narrowed = Boolean(f.taskServiceId);
    } else if (f.taskServiceId && f.studyId) {
      throw new ValidationError(
        'Invalid query: task_service and study cannot be combined without release or task',
        {
          study: ['cannot be combined with task_service unless release or task narrows the list'],
        },
      );
    } else if (f.taskServiceId) {
      const serviceId = f.taskServiceId;
      src = { table, index: 'gsi3', keys: [K.eventsOfService(serviceId)] };
      count = () => serviceEventCount(this.doc, table, serviceId);
      narrowed = false;
    } else if (f.studyId) {
      src = { table, index: 'gsi4', keys: [K.eventsOfStudy(f.studyId)] };
      count = this.counted([C.eventsOfStudy(f.studyId)]);
      narrowed = false;
    } else {
      src = { table, index: 'gsi1', keys: K.eventShards() };
      count = this.counted([C.events]);
      narrowed = false;
    }
    if (!narrowed) {
      const [n, items] = await Promise.all([count(), pageOf(this.doc, src, page)]);
      return { count: n, items: items.map((i) => decode(eventSchema, i)) };
    }
    const sk = src.index ? `${src.index}sk` : 'sk';
    const all = (
      await Promise.all(
        src.keys.map((key) =>
          queryAll(this.doc, {
            TableName: table,
            IndexName: src.index,
            KeyConditionExpression: '#pk = :p',
            ExpressionAttributeNames: { '#pk': src.index ? `${src.index}pk` : 'pk' },
            ExpressionAttributeValues: { ':p': key },
          }),
        ),
      )
    )
      .flat()
      .map((i) => ({ sk: String(i[sk]), value: decode(eventSchema, i) }))
      .filter((x) => matches(x.value, f))
      .sort(bySkDesc);
    return { count: all.length, items: pageInMemory(all, page) };
  }

  private counted(counters: Counter[]): () => Promise<number> {
    return async () =>
      (await readCounts(this.doc, this.tables.coordinator, counters)).reduce((a, b) => a + b, 0);
  }

  /** The task item as it is now (its event counts): strongly consistent, by key. */
  private async taskItem(releaseId: string, taskId: string): Promise<Record<string, unknown> | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tables.coordinator,
        Key: K.task(releaseId, taskId),
        ConsistentRead: true,
      }),
    );
    return out.Item;
  }

  private async releaseOfTask(taskId: string): Promise<string | null> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.tables.coordinator,
        IndexName: 'gsi2',
        KeyConditionExpression: 'gsi2pk = :id AND gsi2sk = :t',
        ExpressionAttributeValues: { ':id': taskId, ':t': 'TA' },
      }),
    );
    const r = out.Items?.[0]?.releaseId;
    return typeof r === 'string' ? r : null;
  }
}
