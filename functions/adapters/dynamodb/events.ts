import { type CoordinatorEvent, eventSchema, type NewEvent } from '../../coordinator/model.js';
import type { EventFilters, EventRepository, Paged } from '../../coordinator/ports.js';
import { type Clock, nowIso, systemClock } from '../../shared/clock.js';
import { ValidationError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Page } from '../../shared/list.js';
import {
  bySkDesc,
  C,
  CounterDeltas,
  decode,
  EVENT_LIST_SHARDS,
  K,
  type LabelledItem,
  pageInMemory,
  pageOf,
  putNew,
  queryAll,
  readCount,
  shardOf,
  type Tables,
  transact,
  VIEW_SHARDS,
} from './common.js';
import { type Documents, GetCommand, QueryCommand } from './documents.js';

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
 * The stored form of an event (key layout in common.ts). `taskReleaseId` is the release of the event's task when the
 * event names a task but no release: such an event is kept beside its task's release, so ?task= reads one release.
 */
export function eventItem(e: CoordinatorEvent, taskReleaseId?: string): Record<string, unknown> {
  const sk = K.listSk(e.createdAt, e.id);
  const home = e.releaseId
    ? K.eventsOfRelease(e.releaseId)
    : e.taskId && taskReleaseId
      ? K.taskEventsOfRelease(taskReleaseId)
      : null;
  return {
    ...K.event(e.id),
    gsi1pk: K.eventShard(shardOf(e.id, EVENT_LIST_SHARDS)),
    gsi1sk: sk,
    ...(home ? { gsi2pk: home, gsi2sk: sk } : {}),
    ...(e.taskServiceId ? { gsi3pk: K.eventsOfService(e.taskServiceId), gsi3sk: sk } : {}),
    ...(e.studyId ? { gsi4pk: K.eventsOfStudy(e.studyId), gsi4sk: sk } : {}),
    ...(taskReleaseId && !e.releaseId ? { taskReleaseId } : {}),
    ...e,
  };
}

/**
 * What an event adds to (sign 1) or takes from (sign -1) the counts of the lists it is in. A task's event counts on
 * its release's shard of the task's view group (VIEW_SHARDS), where the task's callbacks already meet.
 */
export function eventCounts(deltas: CounterDeltas, e: CoordinatorEvent, sign: 1 | -1): CounterDeltas {
  deltas.add(C.events, sign);
  if (e.releaseId)
    deltas.add(C.eventsOfRelease(e.releaseId), sign, e.taskId ? shardOf(e.taskId, VIEW_SHARDS) : undefined);
  if (e.taskServiceId) deltas.add(C.eventsOfService(e.taskServiceId), sign);
  if (e.studyId) deltas.add(C.eventsOfStudy(e.studyId), sign);
  return deltas;
}

/** The Put of one event, for any transaction; its counts go into `deltas` (see eventCounts). */
export function eventPut(table: string, e: CoordinatorEvent, taskReleaseId?: string): LabelledItem {
  return putNew(table, 'event', e.id, eventItem(e, taskReleaseId));
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
   * One TransactWriteItems: the event Put, its counters, plus a ConditionCheck per referenced record, so a reference
   * to a missing record is refused without a separate read. A task is checked under its release, so the caller must
   * pass the task's release id (`taskReleaseId`) - the use case resolves it when the request names only the task.
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
    if (e.taskId)
      check('task', e.taskId, t.coordinator, K.task(refs.taskReleaseId ?? e.releaseId ?? '-', e.taskId));
    if (e.taskServiceId)
      check('task_service', e.taskServiceId, t.coordinator, K.taskService(e.taskServiceId));
    if (e.studyId) check('study', e.studyId, t.studies, K.study(e.studyId));
    for (let attempt = 0; attempt < 5; attempt++) {
      const event = materializeEvent(e, this.clock);
      const counts = eventCounts(new CounterDeltas(), event, 1).items(t.coordinator);
      const out = await transact(this.doc, [
        eventPut(t.coordinator, event, refs.taskReleaseId),
        ...counts,
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

  /** The delete and the counts it takes back, in one transaction conditioned on the event still being there. */
  async delete(id: string): Promise<boolean> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const event = await this.get(id);
      if (!event) return false;
      const out = await transact(this.doc, [
        {
          kind: 'event',
          id,
          item: {
            Delete: {
              TableName: this.tables.coordinator,
              Key: K.event(id),
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
        },
        ...eventCounts(new CounterDeltas(), event, -1).items(this.tables.coordinator),
      ]);
      if (out.ok) return true;
    }
    return false;
  }

  /**
   * Every filter is served by keys (docs/architecture.md lists each combination):
   * - none: the 4 shards of gsi1, merged newest first; release / task_service / study alone: their own partition;
   *   each with its counter;
   * - with `release` or `task`: the events of one release (gsi2), filtered and counted in memory: bounded by the size
   *   of that release;
   * - task_service and study together (neither release nor task): a 400, since no key holds both.
   */
  async list(filters: EventFilters, page: Page): Promise<Paged<CoordinatorEvent>> {
    const table = this.tables.coordinator;
    const decodeAll = (items: Record<string, unknown>[]) => items.map((i) => decode(eventSchema, i));
    if (filters.releaseId || filters.taskId) {
      const partitions: string[] = [];
      if (filters.releaseId) partitions.push(K.eventsOfRelease(filters.releaseId));
      else {
        const releaseId = await this.releaseOfTask(filters.taskId as string);
        if (!releaseId) return { count: 0, items: pageInMemory([], page) };
        partitions.push(K.eventsOfRelease(releaseId), K.taskEventsOfRelease(releaseId));
      }
      if (filters.releaseId && !filters.taskId && !filters.taskServiceId && !filters.studyId) {
        const [count, items] = await Promise.all([
          readCount(this.doc, table, C.eventsOfRelease(filters.releaseId)),
          pageOf(this.doc, { table, index: 'gsi2', keys: partitions }, page),
        ]);
        return { count, items: decodeAll(items) };
      }
      const all = (
        await Promise.all(
          partitions.map((p) =>
            queryAll(this.doc, {
              TableName: table,
              IndexName: 'gsi2',
              KeyConditionExpression: 'gsi2pk = :p',
              ExpressionAttributeValues: { ':p': p },
            }),
          ),
        )
      )
        .flat()
        .map((i) => ({ sk: String(i.gsi2sk), value: decode(eventSchema, i) }))
        .filter((x) => matches(x.value, filters))
        .sort(bySkDesc);
      return { count: all.length, items: pageInMemory(all, page) };
    }
    if (filters.taskServiceId && filters.studyId)
      throw new ValidationError(
        'Invalid query: task_service and study cannot be combined without release or task',
        {
          study: ['cannot be combined with task_service unless release or task narrows the list'],
        },
      );
    const [counter, src] = filters.taskServiceId
      ? [
          C.eventsOfService(filters.taskServiceId),
          { table, index: 'gsi3' as const, keys: [K.eventsOfService(filters.taskServiceId)] },
        ]
      : filters.studyId
        ? [
            C.eventsOfStudy(filters.studyId),
            { table, index: 'gsi4' as const, keys: [K.eventsOfStudy(filters.studyId)] },
          ]
        : [C.events, { table, index: 'gsi1' as const, keys: K.eventShards() }];
    const [count, items] = await Promise.all([
      readCount(this.doc, table, counter),
      pageOf(this.doc, src, page),
    ]);
    return { count, items: decodeAll(items) };
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
