import type { CoordinatorEvent } from '#functions/coordinator/model.js';
import {
  batchGetItems,
  C,
  counterKey,
  counterKeys,
  K,
  type LabelledItem,
  serviceGroupShards,
  shardOf,
  sumCount,
  TASK_COUNTS,
  TASKS_AND_EVENTS,
  VIEW_SHARDS,
} from './common.js';
import type { Documents } from './documents.js';
import { SHARD } from './releases/items.js';

/**
 * The event counts that ride on other items (events.ts, eventFolds): written by the events' own transactions, read
 * by the event lists. A release's count is the sum of its view shards' `ev`, a task's is on its task item, and a
 * service's is its counter items plus what its callbacks counted on the shards of its group of the callbacks' counter
 * item (C.callbackEventsOfService).
 */

/**
 * The counts of an event that ride on other items, for its writer to move with it:
 * - `release`: the release's event count, on one of its view shards (SHARD.events): the task's group for an event
 *   naming a task (where that task's writes already go), any shard the writer writes otherwise (`group` absent);
 * - `task`: the task's event count on the task item (TASK_COUNTS): `events` when the event names the task's release
 *   too, `onlyEvents` when it names the task alone (the task is then found under `releaseId`, its own release).
 */
export interface EventFolds {
  release?: { releaseId: string; group?: number };
  task?: { releaseId: string; taskId: string; attr: string };
}

export function eventFolds(e: CoordinatorEvent, taskReleaseId?: string): EventFolds {
  const out: EventFolds = {};
  if (e.releaseId)
    out.release = {
      releaseId: e.releaseId,
      ...(e.taskId ? { group: shardOf(e.taskId, VIEW_SHARDS) } : {}),
    };
  const taskRelease = e.releaseId ?? taskReleaseId;
  if (e.taskId && taskRelease)
    out.task = {
      releaseId: taskRelease,
      taskId: e.taskId,
      attr: e.releaseId ? TASK_COUNTS.events : TASK_COUNTS.onlyEvents,
    };
  return out;
}

const num = (v: unknown) => (typeof v === 'number' ? v : 0);

/**
 * The items that move an event's folded counts by `sign`, for a transaction that does not write those items anyway
 * (POST and DELETE /events): an ADD on the task item (which must exist: an Update would otherwise create a stray
 * task) and one on the release's view shard (created by it if no write made it yet). `fallbackGroup` is the shard of
 * an event that names no task.
 */
export function foldItems(
  table: string,
  folds: EventFolds,
  sign: 1 | -1,
  fallbackGroup: number,
): LabelledItem[] {
  const items: LabelledItem[] = [];
  if (folds.task)
    items.push({
      kind: 'task',
      id: folds.task.taskId,
      item: {
        Update: {
          TableName: table,
          Key: K.task(folds.task.releaseId, folds.task.taskId),
          UpdateExpression: 'ADD #n :d',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#n': folds.task.attr },
          ExpressionAttributeValues: { ':d': sign },
        },
      },
    });
  if (folds.release)
    items.push({
      kind: 'release_count',
      id: folds.release.releaseId,
      item: {
        Update: {
          TableName: table,
          Key: K.releaseViewShard(folds.release.releaseId, folds.release.group ?? fallbackGroup),
          UpdateExpression: 'ADD #n :d',
          ExpressionAttributeNames: { '#n': SHARD.events },
          ExpressionAttributeValues: { ':d': sign },
        },
      },
    });
  return items;
}

/** How many events name the release: its view shards' `ev`, summed (one BatchGetItem). */
export async function releaseEventCount(doc: Documents, table: string, releaseId: string): Promise<number> {
  const shards = await batchGetItems(
    doc,
    table,
    Array.from({ length: VIEW_SHARDS }, (_, g) => K.releaseViewShard(releaseId, g)),
  );
  return shards.reduce((n, s) => n + num(s[SHARD.events]), 0);
}

/** The task's event counts from its item as read (TASK_COUNTS): naming it with its release, and naming it alone. */
export function taskEventCounts(item: Record<string, unknown> | undefined): { events: number; only: number } {
  return { events: num(item?.[TASK_COUNTS.events]), only: num(item?.[TASK_COUNTS.onlyEvents]) };
}

/**
 * How many events name the service: its counter items and what its callbacks counted on its group's shards of the
 * callbacks' counter item, in one BatchGetItem. Both outlive the service: its events stay listed after it is deleted.
 */
export async function serviceEventCount(doc: Documents, table: string, serviceId: string): Promise<number> {
  const counter = C.eventsOfService(serviceId);
  const callbacks = C.callbackEventsOfService(serviceId);
  const items = await batchGetItems(doc, table, [
    ...counterKeys([counter]),
    ...serviceGroupShards(serviceId).map((n) => counterKey(TASKS_AND_EVENTS, n)),
  ]);
  return sumCount(items, counter) + sumCount(items, callbacks);
}
