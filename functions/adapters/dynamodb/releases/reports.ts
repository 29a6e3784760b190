import { type ReleaseState, taskSchema } from '#functions/coordinator/model.js';
import {
  ChangeConflictError,
  type ReportOutcome,
  type ReportTarget,
  type TaskReportWrite,
} from '#functions/coordinator/ports.js';
import type { TaskState } from '#packages/task-service/src/protocol.js';
import {
  C,
  CounterDeltas,
  callbackShard,
  decode,
  K,
  type LabelledItem,
  queryAll,
  TASK_COUNTS,
  transact,
} from '../common.js';
import { eventCounts, eventPuts, materializeEvent } from '../events.js';
import { type ShardGuard, shardUpdates, taskItem } from './change-items.js';
import { SHARD, viewGroup, viewTasks } from './items.js';
import { batchGet, findById, type ReleaseTable } from './table.js';

/**
 * TaskReports: PATCH /tasks/<id> in two DynamoDB round trips, because the 50 callbacks of a release arrive together
 * (docs/architecture.md, Task callbacks under load). One read finds the task (the id index holds the whole item);
 * one transaction of at most five items writes the task, its view shard, its event and one counter item and checks the
 * service item, each count riding on an item it writes anyway (docs/architecture.md, Counters), and its conditions
 * do what reads did:
 *
 *   task        its state is the one the report was judged against (ALL_OLD: a task that moved comes back whole,
 *               so it is judged again without another read);
 *   view shard  the release is in a state that allows the report (the shard's copy of the release's state);
 *   service     the caller may report about the task's service (bindingCheck, a ConditionCheck).
 *
 * Whether the report completed its release's phase is not the callback's business: the shard records its group's
 * size, and PhaseWatch reads the completed groups off the table's stream (shard-stream.ts), then the view, and wakes
 * the poll loop. So no report reads after its write, and none is sent twice to find out.
 */

interface Ref {
  /** How many tasks the task's view shard holds; absent on tasks written before the shards existed. */
  groupSize?: number;
}

function targetOf(item: Record<string, unknown>, confirmed: boolean): ReportTarget {
  const ref: Ref = { groupSize: typeof item.vgs === 'number' ? item.vgs : undefined };
  return { task: decode(taskSchema, item), confirmed, ref };
}

/** The task from the id index (gsi2 projects the whole item): one Query, which may lag a recent change. */
export async function reportTarget(t: ReleaseTable, taskId: string): Promise<ReportTarget | null> {
  const found = await findById(t, taskId, 'TA');
  return found ? targetOf(found, false) : null;
}

/**
 * The task and its view shard in one strongly consistent BatchGetItem: the shard carries the release's state (no
 * phase, or no shard: the release has not moved since it was created, as writeReport reads it too).
 */
export async function confirmTarget(t: ReleaseTable, target: ReportTarget): Promise<ReportTarget | null> {
  const { releaseId, id } = target.task;
  const taskKey = K.task(releaseId, id);
  const shardKey = K.releaseViewShard(releaseId, viewGroup(id));
  const items = await batchGet(t, [taskKey, shardKey]);
  const task = items.find((i) => i.sk === taskKey.sk);
  if (!task) return null;
  const shard = items.find((i) => i.sk === shardKey.sk);
  const phase = (shard?.[SHARD.phase] as ReleaseState | undefined) ?? 'initializing';
  return { ...targetOf(task, true), phase };
}

export async function writeReport(t: ReleaseTable, r: TaskReportWrite): Promise<ReportOutcome> {
  const ref = r.target.ref as Ref;
  for (let attempt = 0; attempt < 5; attempt++) {
    const events = r.events.map((e) => materializeEvent(e, t.clock));
    const guard: ShardGuard = { phases: r.phases, groupSize: ref.groupSize };
    const out = await transact(t.doc, reportItems(t, r, events, guard));
    if (out.ok) return { written: true, events };
    const failed = (kind: string) => out.conditionFailed.find((f) => f.kind === kind);
    const service = failed('service');
    if (service) return { written: false, why: isQuarantined(service.item) ? 'quarantined' : 'forbidden' };
    const moved = failed('task');
    if (moved)
      return moved.item
        ? { written: false, why: 'moved', target: targetOf(moved.item, true) }
        : { written: false, why: 'gone' };
    const view = failed('view');
    if (view) {
      // No phase on the shard (or no shard): the release has not moved since it was created.
      const phase =
        (view.item?.[SHARD.phase] as TaskReportWrite['phases'][number] | undefined) ?? 'initializing';
      if (r.phases.includes(phase)) continue; // the release moved back in between: write again
      return { written: false, why: 'phase', phase };
    }
    if (out.conditionFailed.length && out.conditionFailed.every((f) => f.kind === 'event')) continue; // fresh ids
    throw new ChangeConflictError(
      out.conditionFailed.length ? 'Report refused' : 'Too much concurrent activity; retry',
      out.conditionFailed.map(({ kind, id }) => ({ kind, id })),
    );
  }
  throw new Error('could not allocate event ids');
}

/**
 * At most five items: the task (with its event count), its view shard (with the release's), the event, the counter
 * item of the counts every callback moves (all events, the service's events, the tasks in the state left and
 * reached: TASKS_AND_EVENTS, on a shard of the service's group) and the service item's binding check (none for an
 * admin). The service item is only checked, never written: the tasks of one service in every release in flight
 * report together, so a count on it would make it the one item all of their transactions write.
 */
function reportItems(
  t: ReleaseTable,
  r: TaskReportWrite,
  events: ReturnType<typeof materializeEvent>[],
  guard: ShardGuard,
): LabelledItem[] {
  const { task } = r.target;
  const counts = new CounterDeltas();
  const shard = callbackShard(task.taskServiceId, task.id);
  for (const e of events) {
    // An event naming the task's service counts on the callbacks' counter item, in the shard of the service's group
    // that the read of its count sums (serviceEventCount); one naming another service counts in that one's counter.
    const ownService = e.taskServiceId === task.taskServiceId;
    eventCounts(counts, e, 1, { serviceCounted: ownService });
    if (ownService) counts.add(C.callbackEventsOfService(task.taskServiceId), 1, shard);
  }
  const taskEvents = events.length
    ? { attr: TASK_COUNTS.events, n: events.filter((e) => e.taskId === task.id).length }
    : undefined;
  const { item, view } = taskItem(
    t,
    task.releaseId,
    { taskId: task.id, expectState: task.state, toState: r.toState, progress: r.progress },
    counts,
    taskEvents,
  );
  const items: LabelledItem[] = [
    {
      kind: 'task',
      id: task.id,
      item: item.Update
        ? { Update: { ...item.Update, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } }
        : { ConditionCheck: { ...item.ConditionCheck, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } },
    } as LabelledItem,
    ...shardUpdates(
      t,
      task.releaseId,
      view ? [view] : [{ taskId: task.id, progress: r.progress }],
      undefined,
      guard,
      new Map([[viewGroup(task.id), events.length]]),
    ),
  ];
  for (const e of events) items.push(...eventPuts(t.table, e));
  items.push(...counts.items(t.table));
  if (!r.actor.isAdmin) items.push(bindingCheck(t, task.taskServiceId, r.actor));
  return items;
}

/**
 * Who may report about a service's tasks, as one condition on the service item (functions/coordinator/identity.ts
 * holds the same rule for the paths that read it instead; an admin skips both):
 *
 *   a task service's own client   only for the service bound to its client id: a service without a client, or one
 *                                 that no longer exists, is written by no one's own client;
 *   any other token               the bound client's identity for a bound service; anyone for a service without a
 *                                 client, or one that no longer exists (it binds nothing).
 *
 * A quarantined service's tasks take no report from anyone but an admin: the service item says so, and the same
 * check reads it (ALL_OLD tells the two refusals apart).
 */
export function bindingCheck(
  t: ReleaseTable,
  serviceId: string,
  actor: Pick<TaskReportWrite['actor'], 'identity' | 'boundClientOnly'>,
): LabelledItem {
  const { identity } = actor;
  const unbound =
    'attribute_not_exists(pk) OR attribute_not_exists(clientId) OR attribute_type(clientId, :null)';
  const bound = actor.boundClientOnly
    ? 'attribute_exists(pk) AND clientId = :me'
    : identity === null
      ? unbound
      : `${unbound} OR clientId = :me`;
  return {
    kind: 'service',
    id: serviceId,
    item: {
      ConditionCheck: {
        TableName: t.table,
        Key: K.taskService(serviceId),
        ConditionExpression: `(${NOT_QUARANTINED}) AND (${bound})`,
        ExpressionAttributeNames: { '#q': 'quarantine' },
        // An own client always has an identity (its client_id); without one, '' matches no client.
        ExpressionAttributeValues: actor.boundClientOnly
          ? { ':null': 'NULL', ':me': identity ?? '' }
          : { ':null': 'NULL', ...(identity === null ? {} : { ':me': identity }) },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
  };
}

/** The service item's `quarantine` (model.ts): absent or null while the service is not quarantined. */
const NOT_QUARANTINED = 'attribute_not_exists(#q) OR attribute_type(#q, :null)';
const isQuarantined = (item: Record<string, unknown> | undefined) =>
  item?.quarantine !== undefined && item.quarantine !== null;

/**
 * Whether the release has tasks and every one is in `state`: the view and its shards, read consistently (PhaseWatch
 * reads it after the stream showed a group complete, so the writes it saw are all in it).
 */
export async function allTasksIn(t: ReleaseTable, releaseId: string, state: TaskState): Promise<boolean> {
  const items = await queryAll(t.doc, {
    TableName: t.table,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :view)',
    ExpressionAttributeValues: { ':pk': K.releasePk(releaseId), ':view': 'RE#V' },
    ConsistentRead: true,
  });
  const tasks = viewTasks(
    items.find((i) => i.sk === 'RE#V'),
    releaseId,
    items,
  );
  return tasks !== null && tasks.length > 0 && tasks.every((task) => task.state === state);
}
