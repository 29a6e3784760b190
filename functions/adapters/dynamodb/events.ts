import { type CoordinatorEvent, eventSchema, type NewEvent } from '../../coordinator/model.js';
import type { EventFilters, EventRepository } from '../../coordinator/ports.js';
import { type Clock, nowIso, systemClock } from '../../shared/clock.js';
import { ValidationError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Page } from '../../shared/list.js';
import { decode, Filter, K, type LabelledItem, pagedQuery, putNew, type Tables, transact } from './common.js';
import { DeleteCommand, type Documents, GetCommand } from './documents.js';

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

/** The Put of one event, for any transaction (a state change and its event are written together). */
export function eventPut(table: string, e: CoordinatorEvent): LabelledItem {
  return putNew(table, 'event', e.id, {
    ...K.event(e.id),
    gsi1pk: 'EV',
    gsi1sk: K.listSk(e.createdAt, e.id),
    ...(e.releaseId ? { gsi2pk: K.eventsOfRelease(e.releaseId), gsi2sk: K.listSk(e.createdAt, e.id) } : {}),
    ...e,
  });
}

export class DynamoEventRepository implements EventRepository {
  constructor(
    private readonly doc: Documents,
    private readonly tables: Tables,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * One TransactWriteItems: the event Put plus a ConditionCheck per referenced record, so a reference to a missing
   * record is refused without a separate read. A task is checked under its release, so the caller must pass the
   * task's release id (`taskReleaseId`) - the use case resolves it when the request names only the task.
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
      const out = await transact(this.doc, [eventPut(t.coordinator, event), ...checks]);
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

  async delete(id: string): Promise<boolean> {
    const out = await this.doc.send(
      new DeleteCommand({ TableName: this.tables.coordinator, Key: K.event(id), ReturnValues: 'ALL_OLD' }),
    );
    return out.Attributes !== undefined;
  }

  async list(filters: EventFilters, page: Page): Promise<{ count: number; items: CoordinatorEvent[] }> {
    const f = new Filter()
      .eq('taskId', filters.taskId)
      .eq('taskServiceId', filters.taskServiceId)
      .eq('studyId', filters.studyId);
    // Events of one release have their own index partition; everything else filters the type's partition.
    const input = filters.releaseId
      ? {
          TableName: this.tables.coordinator,
          IndexName: 'gsi2',
          KeyConditionExpression: 'gsi2pk = :p',
          ExpressionAttributeValues: { ':p': K.eventsOfRelease(filters.releaseId) } as Record<
            string,
            unknown
          >,
        }
      : {
          TableName: this.tables.coordinator,
          IndexName: 'gsi1',
          KeyConditionExpression: 'gsi1pk = :p',
          ExpressionAttributeValues: { ':p': 'EV' } as Record<string, unknown>,
        };
    const { count, items } = await pagedQuery(this.doc, f.apply(input), page);
    return { count, items: items.map((i) => decode(eventSchema, i)) };
  }
}
