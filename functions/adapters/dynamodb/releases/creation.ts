import {
  type CoordinatorEvent,
  CREATING,
  type NewEvent,
  type Release,
  type ReleaseAggregate,
  releaseSchema,
  type Task,
  type TaskService,
} from '#functions/coordinator/model.js';
import { ChangeConflictError, type NewRelease, type RegistryGuard } from '#functions/coordinator/ports.js';
import { nowIso } from '#functions/shared/clock.js';
import { newId } from '#functions/shared/ids.js';
import {
  C,
  CounterDeltas,
  decode,
  K,
  type LabelledItem,
  putNew,
  shardOf,
  TASK_COUNTS,
  transact,
  VIEW_SHARDS,
} from '../common.js';
import { eventFolds } from '../event-counts.js';
import { eventCounts, eventPuts, materializeEvent } from '../events.js';
import { assertFits, RELEASE_RECORD_BUDGET } from '../item-size.js';
import {
  groupSizes,
  oldestFirst,
  releaseItem,
  releaseViewItem,
  SHARD,
  studyMemberItem,
  taskItem,
  viewTasks,
} from './items.js';
import { batchGet, type ReleaseTable } from './table.js';

/** Studies indexed in the creating transaction when they fit; the rest follow in transactions of this many. */
const STUDY_INDEX_CHUNK = 49;
/** DynamoDB's limit of items per transaction. */
const MAX_ITEMS = 100;

/**
 * Creates a release with one pending task per service, its events, its counts and the registry guard. Every new item
 * is a putNew (attribute_not_exists(pk)): a fresh id that is already taken fails the transaction, and new ids are
 * drawn.
 *
 * A release whose items fit in one transaction (100) is written in one. A larger one is written in parts: the first
 * holds the release item (marked CREATING), its task view (every task), the registry guard, its events and counts and
 * the tasks that fit; each later part holds more tasks with their counts, and the last removes the mark. Every part
 * is all or nothing, and the view names every task from the first part on, so a creation that stops between two parts
 * (a crash, a timeout) is completed from the view by finishCreation, which the release's first orchestration step
 * runs (the reconciler starts that step for a release that has no execution).
 */
export async function create(
  t: ReleaseTable,
  input: NewRelease,
  services: Pick<TaskService, 'id' | 'name'>[],
  guard: RegistryGuard,
  events: (release: Release, tasks: Task[]) => NewEvent[],
): Promise<ReleaseAggregate & { events: CoordinatorEvent[] }> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const createdAt = nowIso(t.clock);
    const release: Release = { id: newId('RE'), state: 'initializing', createdAt, ...input };
    const taskIds = new Set<string>();
    const tasks: Task[] = services.map((s) => {
      let id = newId('TA');
      while (taskIds.has(id)) id = newId('TA');
      taskIds.add(id);
      return {
        id,
        releaseId: release.id,
        taskServiceId: s.id,
        serviceName: s.name,
        state: 'pending',
        progress: 0,
        createdAt,
      };
    });
    const evs = events(release, tasks).map((e) => materializeEvent(e, t.clock));
    const first = firstPart(t, release, tasks, evs, guard);
    const out = await transact(t.doc, first.items);
    if (out.ok) {
      if (first.marked) await finish(t, release, tasks.slice(first.tasks), tasks);
      return { release, tasks: tasks.sort(oldestFirst), notes: [], extras: {}, events: evs };
    }
    if (out.conditionFailed.some((f) => f.kind === 'registry'))
      throw new ChangeConflictError('The task services changed while the release was created', [
        { kind: 'registry', id: 'registry' },
      ]);
    if (out.conditionFailed.length === 0)
      throw new ChangeConflictError('Too much concurrent activity; retry');
    // Only fresh ids collided: draw new ones.
  }
  throw new Error('could not allocate release ids');
}

/**
 * The first transaction of a creation: the release item, its view, the registry guard (with the task counts of the
 * services whose tasks it writes), its events with their counts, and as many tasks as fit; the studies' index when
 * it fits too.
 */
function firstPart(
  t: ReleaseTable,
  release: Release,
  tasks: Task[],
  evs: CoordinatorEvent[],
  guard: RegistryGuard,
): { items: LabelledItem[]; tasks: number; marked: boolean } {
  const counts = new CounterDeltas().add(C.releases, 1).add(C.releasesInState(release.state), 1);
  const fixed: LabelledItem[] = [];
  // The release's event count on a view shard; the shards are otherwise written by the first change that needs one.
  let releaseEvents = 0;
  const taskEvents = new Map<string, number>();
  for (const e of evs) {
    fixed.push(...eventPuts(t.table, e));
    eventCounts(counts, e, 1);
    const folds = eventFolds(e);
    if (folds.release) releaseEvents++;
    if (folds.task) taskEvents.set(folds.task.taskId, (taskEvents.get(folds.task.taskId) ?? 0) + 1);
  }
  if (releaseEvents)
    fixed.push({
      kind: 'release',
      id: release.id,
      item: {
        Update: {
          TableName: t.table,
          Key: K.releaseViewShard(release.id, shardOf(release.id, VIEW_SHARDS)),
          UpdateExpression: 'ADD #n :d',
          ExpressionAttributeNames: { '#n': SHARD.events },
          ExpressionAttributeValues: { ':d': releaseEvents },
        },
      },
    });
  const view = releaseViewItem(release.id, tasks);
  assertFits(view, undefined, 'task view');
  // Room for the release, its view, the registry and the counter items.
  const room = MAX_ITEMS - fixed.length - 3 - (counts.size + 1);
  const n = Math.min(tasks.length, room);
  // The study index goes into the same transaction when it fits (the common case: a few studies).
  const studies = release.studies;
  const inline = n === tasks.length && room - n >= 2 * studies.length ? studies : [];
  const marked = n < tasks.length || inline.length < studies.length;
  const item = { ...releaseItem(release), ...(marked ? { [CREATING]: true } : {}) };
  assertFits(item, RELEASE_RECORD_BUDGET, 'release');
  const sizes = groupSizes(tasks);
  const mine = tasks.slice(0, n);
  taskCounts(counts, mine);
  const items: LabelledItem[] = [
    putNew(t.table, 'release', release.id, item),
    putNew(t.table, 'release', release.id, view),
    ...mine.map((task) =>
      putNew(t.table, 'task', task.id, {
        ...taskItem(task, sizes.get(task.id)),
        ...(taskEvents.get(task.id) ? { [TASK_COUNTS.events]: taskEvents.get(task.id) } : {}),
      }),
    ),
    ...fixed,
    ...counts.items(t.table),
    registryUpdate(t, mine, guard),
    ...studyIndexItems(t, release, inline),
  ];
  return { items, tasks: n, marked };
}

/**
 * The parts of a marked creation after its first: the study index (idempotent: a chunk written before is skipped),
 * then the tasks not written yet, the last part removing the mark.
 */
async function finish(
  t: ReleaseTable,
  release: Release,
  missing: Task[],
  all: readonly Task[],
): Promise<void> {
  if (release.studies.length) await indexStudies(t, release, release.studies);
  if (missing.length) await writeTasks(t, release.id, missing, all);
  else await transact(t.doc, [creationDone(t, release.id)]);
}

/** The counts of new pending tasks: all tasks and the tasks in `pending`. */
function taskCounts(counts: CounterDeltas, tasks: readonly Task[]): CounterDeltas {
  return counts.add(C.tasks, tasks.length).add(C.tasksInState('pending'), tasks.length);
}

/**
 * The registry item's part: how many tasks each service was given (`tasks:<service>`, the count of GET
 * /tasks?task_service=), and, in the first part, the guard: no task service was deleted since the caller listed them
 * (a delete moves servicesRev; 0 means none ever was, so the attribute is absent), otherwise the release would hold a
 * task of a service that is gone, and it is created again from a fresh list. Moving releaseSeq in turn makes a
 * concurrent DELETE /task-services retry (RegistryGuard).
 */
function registryUpdate(t: ReleaseTable, tasks: readonly Task[], guard?: RegistryGuard): LabelledItem {
  const perService = new Map<string, number>();
  for (const task of tasks) perService.set(task.taskServiceId, (perService.get(task.taskServiceId) ?? 0) + 1);
  const entries = [...perService];
  const names = Object.fromEntries(entries.map(([id], i) => [`#t${i}`, K.serviceTaskCount(id)]));
  const values = Object.fromEntries(entries.map(([, n], i) => [`:t${i}`, n]));
  const adds = entries.length ? ` ADD ${entries.map((_, i) => `#t${i} :t${i}`).join(', ')}` : '';
  return {
    kind: 'registry',
    id: 'registry',
    item: {
      Update: {
        TableName: t.table,
        Key: K.registry(),
        ...(guard
          ? {
              UpdateExpression: `SET releaseSeq = if_not_exists(releaseSeq, :zero) + :one${adds}`,
              ConditionExpression:
                guard.servicesRev === 0 ? 'attribute_not_exists(servicesRev)' : 'servicesRev = :rev',
              ExpressionAttributeValues: {
                ':zero': 0,
                ':one': 1,
                ...(guard.servicesRev === 0 ? {} : { ':rev': guard.servicesRev }),
                ...values,
              },
            }
          : {
              UpdateExpression: adds.trim(),
              ...(entries.length ? { ExpressionAttributeValues: values } : {}),
            }),
        ...(entries.length ? { ExpressionAttributeNames: names } : {}),
      },
    },
  };
}

/**
 * The tasks of a creation after its first part, in transactions of as many as fit: each with its counts and the
 * registry's task counts; the last also removes the release's CREATING mark. `all` is every task of the release
 * (their view shard sizes). A task already written (finishCreation running beside a creation that went on) cancels
 * its part, which is then read and written again without it.
 */
async function writeTasks(t: ReleaseTable, releaseId: string, rest: Task[], all: readonly Task[]) {
  const sizes = groupSizes(all);
  let pending = rest;
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt >= 10) throw new ChangeConflictError('Too much concurrent activity; retry');
    // Room for the registry, the counter item and the release item.
    const part = pending.slice(0, MAX_ITEMS - 3);
    const last = part.length === pending.length;
    const items: LabelledItem[] = [
      ...part.map((task) => putNew(t.table, 'task', task.id, taskItem(task, sizes.get(task.id)))),
      ...taskCounts(new CounterDeltas(), part).items(t.table),
      registryUpdate(t, part),
      ...(last ? [creationDone(t, releaseId)] : []),
    ];
    const out = await transact(t.doc, items);
    if (out.ok) {
      pending = pending.slice(part.length);
      continue;
    }
    if (out.conditionFailed.some((f) => f.kind === 'release')) return; // completed by another writer
    if (!out.conditionFailed.some((f) => f.kind === 'task'))
      throw new ChangeConflictError('Too much concurrent activity; retry');
    const written = new Set(
      (
        await batchGet(
          t,
          pending.map((task) => K.task(releaseId, task.id)),
        )
      ).map((i) => String(i.sk)),
    );
    pending = pending.filter((task) => !written.has(K.task(releaseId, task.id).sk));
    if (pending.length === 0) await transact(t.doc, [creationDone(t, releaseId)]);
  }
}

const creationDone = (t: ReleaseTable, releaseId: string): LabelledItem => ({
  kind: 'release',
  id: releaseId,
  item: {
    Update: {
      TableName: t.table,
      Key: K.release(releaseId),
      UpdateExpression: 'REMOVE #c',
      ConditionExpression: 'attribute_exists(#c)',
      ExpressionAttributeNames: { '#c': CREATING },
    },
  },
});

/**
 * Completes a creation that stopped between its parts: the tasks the view names that have no item yet are written,
 * with their counts, and the CREATING mark goes. A release that is not marked is left as it is. Safe to run twice,
 * and beside a creation still under way: each task is written once.
 */
export async function finishCreation(t: ReleaseTable, releaseId: string): Promise<boolean> {
  const [releaseRaw, viewRaw] = await Promise.all([
    batchGet(t, [K.release(releaseId)]),
    batchGet(t, [K.releaseView(releaseId)]),
  ]);
  const raw = releaseRaw[0];
  if (!raw || raw[CREATING] === undefined) return false;
  const release = decode(releaseSchema, raw);
  const tasks = viewTasks(viewRaw[0], releaseId) ?? [];
  const written = new Set(
    (
      await batchGet(
        t,
        tasks.map((task) => K.task(releaseId, task.id)),
      )
    ).map((i) => String(i.sk)),
  );
  await finish(
    t,
    release,
    tasks.filter((task) => !written.has(K.task(releaseId, task.id).sk)),
    tasks,
  );
  return true;
}

/**
 * The release under each study and the counts. Each member item is a putNew, so it is written once: a repeat finds
 * the item and is cancelled, and the study's count never counts a release twice.
 */
function studyIndexItems(t: ReleaseTable, release: Release, studies: readonly string[]): LabelledItem[] {
  const counts = new CounterDeltas();
  for (const s of studies) counts.add(C.releasesOfStudy(s), 1);
  return [
    ...studies.map((s) => putNew(t.table, 'study_member', s, studyMemberItem(release, s))),
    ...counts.items(t.table),
  ];
}

/**
 * Indexes a release under studies that did not fit into its creating transaction, in transactions of
 * STUDY_INDEX_CHUNK studies (each study's member item and count together). A chunk written before is skipped.
 */
async function indexStudies(t: ReleaseTable, release: Release, studies: readonly string[]): Promise<void> {
  for (let i = 0; i < studies.length; i += STUDY_INDEX_CHUNK) {
    const chunk = studies.slice(i, i + STUDY_INDEX_CHUNK);
    const out = await transact(t.doc, studyIndexItems(t, release, chunk));
    if (out.ok || out.conditionFailed.every((f) => f.kind === 'study_member')) continue;
    throw new Error(`could not index release ${release.id} under its studies`);
  }
}
