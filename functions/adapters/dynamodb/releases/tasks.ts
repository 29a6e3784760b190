import { isTerminalRelease, releaseSchema, type Task, taskSchema } from '#functions/coordinator/model.js';
import type { Paged } from '#functions/coordinator/ports.js';
import { ValidationError } from '#functions/shared/errors.js';
import type { Page } from '#functions/shared/list.js';
import type { TaskState } from '#packages/task-service/src/protocol.js';
import { bySkDesc, C, decode, K, pageInMemory, pageOf, queryAll, readCount } from '../common.js';
import { GetCommand } from '../documents.js';
import { activeReleaseItems } from './active.js';
import { viewKeys, viewTasks } from './items.js';
import { load } from './reads.js';
import { batchGet, collection, getById, type ReleaseTable } from './table.js';

/** Reading tasks: one by id, the lists and their filters, a service's tasks. Tasks only change in changes.ts. */

export function getTask(t: ReleaseTable, id: string): Promise<Task | null> {
  return getById(t, id, 'TA', taskSchema);
}

/**
 * ?release= (with any other filter): the release's task view, filtered and counted in memory (bounded by one
 * release). Otherwise ?state= or ?task_service= read their gsi3 / gsi4 partition, and no filter gsi1 TA; the
 * count of a service's tasks is the registry's `tasks:<service>` attribute, the others are counters. task_service
 * and state together without release are a 400: no key holds both (docs/architecture.md).
 */
export async function listTasks(
  t: ReleaseTable,
  filters: { releaseId?: string; taskServiceId?: string; state?: TaskState },
  page: Page,
): Promise<Paged<Task>> {
  const table = t.table;
  if (filters.releaseId) {
    const all = (await tasksOfRelease(t, filters.releaseId))
      .filter(
        (task) =>
          (!filters.state || task.state === filters.state) &&
          (!filters.taskServiceId || task.taskServiceId === filters.taskServiceId),
      )
      .map((task) => ({ sk: K.listSk(task.createdAt, task.id), value: task }))
      .sort(bySkDesc);
    return { count: all.length, items: pageInMemory(all, page) };
  }
  if (filters.taskServiceId && filters.state)
    throw new ValidationError('Invalid query: task_service and state cannot be combined without release', {
      state: ['cannot be combined with task_service unless release narrows the list'],
    });
  const decodeAll = (items: Record<string, unknown>[]) => items.map((i) => decode(taskSchema, i));
  if (filters.taskServiceId) {
    const [count, items] = await Promise.all([
      serviceTaskCount(t, filters.taskServiceId),
      pageOf(t.doc, { table, index: 'gsi4', keys: [K.tasksOfService(filters.taskServiceId)] }, page),
    ]);
    return { count, items: decodeAll(items) };
  }
  const [count, items] = await Promise.all([
    readCount(t.doc, table, filters.state ? C.tasksInState(filters.state) : C.tasks),
    pageOf(
      t.doc,
      filters.state
        ? { table, index: 'gsi3', keys: [K.tasksInState(filters.state)] }
        : { table, index: 'gsi1', keys: ['TA'] },
      page,
    ),
  ]);
  return { count, items: decodeAll(items) };
}

/** How many tasks a service was given: the registry's `tasks:<service>`, moved by each release's creation. */
async function serviceTaskCount(t: ReleaseTable, taskServiceId: string): Promise<number> {
  const got = await t.doc.send(
    new GetCommand({
      TableName: t.table,
      Key: K.registry(),
      ConsistentRead: true,
      ProjectionExpression: '#n',
      ExpressionAttributeNames: { '#n': K.serviceTaskCount(taskServiceId) },
    }),
  );
  const n = got.Item?.[K.serviceTaskCount(taskServiceId)];
  return typeof n === 'number' ? n : 0;
}

/**
 * A release's tasks from its task view and the view's shards (one strongly consistent Query of the RE#V prefix), or
 * from the task items for an older release.
 */
async function tasksOfRelease(t: ReleaseTable, releaseId: string): Promise<Task[]> {
  const items = await queryAll(t.doc, {
    TableName: t.table,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :view)',
    ExpressionAttributeValues: { ':pk': K.releasePk(releaseId), ':view': 'RE#V' },
    ConsistentRead: true,
  });
  const viewed = viewTasks(
    items.find((i) => i.sk === 'RE#V'),
    releaseId,
    items,
  );
  if (viewed) return viewed;
  return (await collection(t, releaseId, 'TA#')).map((i) => decode(taskSchema, i));
}

/** Every task ever given to a service (its gsi4 partition): for maintenance, not for a request path. */
export async function tasksOfService(t: ReleaseTable, taskServiceId: string): Promise<Task[]> {
  const items = await queryAll(t.doc, {
    TableName: t.table,
    IndexName: 'gsi4',
    KeyConditionExpression: 'gsi4pk = :p',
    ExpressionAttributeValues: { ':p': K.tasksOfService(taskServiceId) },
  });
  return items.map((i) => decode(taskSchema, i));
}

/** Tasks of a service that are in the given states, from the active releases' task views only. */
export async function activeTasksOfService(
  t: ReleaseTable,
  taskServiceId: string,
  states?: readonly TaskState[],
): Promise<Task[]> {
  const items = await activeReleaseItems(t);
  const active = items.map((i) => decode(releaseSchema, i)).filter((r) => !isTerminalRelease(r.state));
  const got = await batchGet(
    t,
    active.flatMap((r) => viewKeys(r.id)),
  );
  const views = new Map(got.filter((i) => i.sk === 'RE#V').map((i) => [String(i.pk), i]));
  const out: Task[] = [];
  for (const release of active) {
    const tasks =
      viewTasks(views.get(K.releasePk(release.id)), release.id, got) ??
      (await load(t, release.id))?.tasks ??
      [];
    for (const task of tasks)
      if (task.taskServiceId === taskServiceId && (!states || states.includes(task.state))) out.push(task);
  }
  return out;
}
