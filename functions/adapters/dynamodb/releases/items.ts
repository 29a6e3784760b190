import {
  isTerminalRelease,
  type Release,
  type ReleaseAggregate,
  type ReleaseNote,
  releaseNoteSchema,
  releaseSchema,
  type Task,
  taskSchema,
} from '#functions/coordinator/model.js';
import * as z from '#functions/shared/zod.js';
import { TASK_STATES, type TaskState } from '#packages/task-service/src/protocol.js';
import { decode, K, KEY_ATTRIBUTES, shardOf, VIEW_SHARDS } from '../common.js';

/**
 * The items of the release store, as written and read back: the release item, its task view, tasks, notes and study
 * member items (the key layout is in common.ts). Pure functions: migrate.ts and the benchmarks build items with
 * them too, so there is one shape per item.
 */

const RELEASE_FIELDS = new Set<string>(Object.keys(releaseSchema.shape));
/** Attributes of the release item that are neither Release fields nor orchestration extras (see common.ts). */
const VIEW_ATTRIBUTES = ['taskView', 'noteIds'] as const;
/** Names an orchestration extra may not take: they are the release's own fields, its keys or its views. */
export const RESERVED = new Set<string>([...RELEASE_FIELDS, ...KEY_ATTRIBUTES, ...VIEW_ATTRIBUTES]);

/** One task as the release item's task view keeps it (short names: the view is on every release item). */
const taskViewEntry = z.object({
  s: z.enum(TASK_STATES),
  p: z.number(),
  ts: z.string(),
  n: z.string(),
  c: z.string(),
});
const taskViewSchema = z.record(z.string(), taskViewEntry);
const viewOf = (t: Task): z.infer<typeof taskViewEntry> => ({
  s: t.state,
  p: t.progress,
  ts: t.taskServiceId,
  n: t.serviceName,
  c: t.createdAt,
});

const newestFirst = (a: { createdAt: string; id: string }, b: { createdAt: string; id: string }) =>
  a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
export const oldestFirst = (a: { createdAt: string; id: string }, b: { createdAt: string; id: string }) =>
  -newestFirst(a, b);

/** The stored release item (key layout in common.ts), with the ids of its notes. */
export function releaseItem(r: Release, noteIds: string[] = []): Record<string, unknown> {
  return {
    ...K.release(r.id),
    gsi1pk: 'RE',
    gsi1sk: K.listSk(r.createdAt, r.id),
    ...(isTerminalRelease(r.state) ? {} : K.activeRelease(r.createdAt, r.id)),
    gsi3pk: K.releasesInState(r.state),
    gsi3sk: K.listSk(r.createdAt, r.id),
    ...(noteIds.length ? { noteIds: new Set(noteIds) } : {}),
    ...r,
  };
}

/**
 * The release's task view item, every task as created. It is apart from the release item on purpose: the release
 * item is projected into three indexes, so keeping the view there made every task callback rewrite four copies of a
 * large item. Later changes go to the view's shards (viewShard), never here, so callbacks of one release do not all
 * write one item.
 */
export function releaseViewItem(releaseId: string, tasks: Task[]): Record<string, unknown> {
  return { ...K.releaseView(releaseId), taskView: Object.fromEntries(tasks.map((t) => [t.id, viewOf(t)])) };
}

/** The view shard (group) of a task: its id decides, so a writer needs no read to find it. */
export const viewGroup = (taskId: string) => shardOf(taskId, VIEW_SHARDS);

/** The keys of a release's view and of all its shards. */
export const viewKeys = (releaseId: string) => [
  K.releaseView(releaseId),
  ...Array.from({ length: VIEW_SHARDS }, (_, g) => K.releaseViewShard(releaseId, g)),
];

/**
 * Attribute names of a view shard: a task's later state and progress, a state's count, the release's state, the
 * number of tasks in its group (written by the task reports, read from the stream by PhaseWatch), and the shard's
 * share of the release's event count (the events of its group's tasks, and those of the release itself that a
 * transaction writing this shard counted here; the release's count is the sum over its shards).
 */
export const SHARD = {
  state: (taskId: string) => `s:${taskId}`,
  progress: (taskId: string) => `p:${taskId}`,
  count: (state: TaskState) => `n:${state}`,
  phase: 'phase',
  size: 'size',
  events: 'ev',
} as const;

/** How many tasks of `tasks` share each one's view group: the count a callback's completion check compares with. */
export function groupSizes(tasks: readonly { id: string }[]): Map<string, number> {
  const per = new Map<number, number>();
  for (const t of tasks) per.set(viewGroup(t.id), (per.get(viewGroup(t.id)) ?? 0) + 1);
  return new Map(tasks.map((t) => [t.id, per.get(viewGroup(t.id)) ?? 0]));
}

/**
 * The view shards of a release whose tasks are as given (the start-up migration; new releases get theirs from the
 * changes that need them): the release's state, each group's counts per state, and the release's event count
 * (`events`, on shard 0). The tasks' states are in the view item itself, so the shards hold no overrides.
 */
export function viewShardItems(release: Release, tasks: Task[], events = 0): Record<string, unknown>[] {
  return Array.from({ length: VIEW_SHARDS }, (_, g) => {
    const counts: Record<string, number> = {};
    const group = tasks.filter((t) => viewGroup(t.id) === g);
    for (const t of group)
      if (t.state !== 'pending') counts[SHARD.count(t.state)] = (counts[SHARD.count(t.state)] ?? 0) + 1;
    return {
      ...K.releaseViewShard(release.id, g),
      ...(release.state === 'initializing' ? {} : { [SHARD.phase]: release.state }),
      ...(group.length ? { [SHARD.size]: group.length } : {}),
      ...(g === 0 && events ? { [SHARD.events]: events } : {}),
      ...counts,
    };
  });
}

/** The stored task item; `groupSize` is how many tasks its view shard holds (groupSizes). */
export function taskItem(t: Task, groupSize?: number): Record<string, unknown> {
  const sk = K.listSk(t.createdAt, t.id);
  return {
    ...(groupSize === undefined ? {} : { vgs: groupSize }),
    ...K.task(t.releaseId, t.id),
    gsi1pk: 'TA',
    gsi1sk: sk,
    gsi2pk: t.id,
    gsi2sk: 'TA',
    gsi3pk: K.tasksInState(t.state),
    gsi3sk: sk,
    gsi4pk: K.tasksOfService(t.taskServiceId),
    gsi4sk: sk,
    ...t,
  };
}

export function noteItem(n: ReleaseNote): Record<string, unknown> {
  const sk = K.listSk(n.createdAt, n.id);
  return {
    ...K.note(n.releaseId, n.id),
    gsi1pk: 'RN',
    gsi1sk: sk,
    gsi2pk: n.id,
    gsi2sk: 'RN',
    ...(n.studyId ? { gsi3pk: K.notesOfStudy(n.studyId), gsi3sk: sk } : {}),
    ...n,
  };
}

/** A release under one of its studies (the ?study= list). */
export function studyMemberItem(r: Release, studyId: string): Record<string, unknown> {
  return { pk: K.releasesOfStudy(studyId), sk: K.listSk(r.createdAt, r.id), releaseId: r.id };
}

/** The sort key of a release's wake latch item (latch.ts; K.releaseLatch). */
export const LATCH_SK = 'RE#L';

/** The wake latch's attributes (functions/orchestration/wake-latch.ts), kept on the latch item (latch.ts). */
export const LATCH_EXTRAS: ReadonlySet<string> = new Set(['waitToken', 'waitKind', 'wakePending', 'waitSeq']);

/** The latch attributes an item holds: a latch item's, or those an earlier layout left on a release item. */
export function latchOf(item: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!item) return {};
  return Object.fromEntries(Object.entries(item).filter(([k]) => LATCH_EXTRAS.has(k)));
}

/** The orchestration extras of a release item: whatever it holds beyond the release's fields, keys and views. */
export function extrasOf(item: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(item).filter(([k]) => !RESERVED.has(k)));
}

const shardState = z.enum(TASK_STATES);
const shardProgress = z.number();

/**
 * The tasks of a task view item with the later states and progress its shards hold (any of the release's shard
 * items; others are ignored), or null when the release has no view (written before the view existed).
 */
export function viewTasks(
  item: Record<string, unknown> | undefined,
  releaseId: string,
  shards: readonly Record<string, unknown>[] = [],
): Task[] | null {
  if (item?.taskView === undefined) return null;
  const view = z.parse(taskViewSchema, item.taskView);
  const state = new Map<string, TaskState>();
  const progress = new Map<string, number>();
  for (const shard of shards) {
    if (!String(shard.sk).startsWith('RE#V#') || shard.pk !== K.releasePk(releaseId)) continue;
    for (const [name, value] of Object.entries(shard)) {
      if (name.startsWith('s:')) state.set(name.slice(2), z.parse(shardState, value));
      else if (name.startsWith('p:')) progress.set(name.slice(2), z.parse(shardProgress, value));
    }
  }
  return Object.entries(view).map(([id, v]) => ({
    id,
    releaseId,
    taskServiceId: v.ts,
    serviceName: v.n,
    state: state.get(id) ?? v.s,
    progress: progress.get(id) ?? v.p,
    createdAt: v.c,
  }));
}

/** Splits the items of one release collection into the aggregate (tasks from the task view when it has one). */
export function aggregate(items: Record<string, unknown>[]): ReleaseAggregate | null {
  let release: Release | undefined;
  let extras: Record<string, unknown> = {};
  let tasks: Task[] = [];
  const notes: ReleaseNote[] = [];
  let view: Record<string, unknown> | undefined;
  let latch: Record<string, unknown> = {};
  const shards: Record<string, unknown>[] = [];
  for (const item of items) {
    const sk = String(item.sk);
    if (sk === 'RE') {
      release = decode(releaseSchema, item);
      extras = extrasOf(item);
    } else if (sk === LATCH_SK) latch = latchOf(item);
    else if (sk === 'RE#V') view = item;
    else if (sk.startsWith('RE#V#')) shards.push(item);
    else if (sk.startsWith('TA#')) tasks.push(decode(taskSchema, item));
    else if (sk.startsWith('RN#')) notes.push(decode(releaseNoteSchema, item));
  }
  if (!release) return null;
  const viewed = viewTasks(view, release.id, shards);
  if (viewed) tasks = viewed;
  // The latch item's values win over any an earlier layout left on the release item (latch.ts).
  return {
    release,
    tasks: tasks.sort(oldestFirst),
    notes: notes.sort(oldestFirst),
    extras: { ...extras, ...latch },
  };
}
