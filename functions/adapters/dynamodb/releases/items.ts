import {
  isTerminalRelease,
  type Release,
  type ReleaseAggregate,
  type ReleaseNote,
  releaseNoteSchema,
  releaseSchema,
  TASK_STATES,
  type Task,
  taskSchema,
} from '../../../coordinator/model.js';
import * as z from '../../../shared/zod.js';
import { decode, K, KEY_ATTRIBUTES } from '../common.js';

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
 * The release's task view item. It is apart from the release item on purpose: the release item is projected into
 * three indexes, so keeping the view there made every task callback rewrite four copies of a large item, and
 * concurrent callbacks of one release queue on it.
 */
export function releaseViewItem(releaseId: string, tasks: Task[]): Record<string, unknown> {
  return { ...K.releaseView(releaseId), taskView: Object.fromEntries(tasks.map((t) => [t.id, viewOf(t)])) };
}

export function taskItem(t: Task): Record<string, unknown> {
  const sk = K.listSk(t.createdAt, t.id);
  return {
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

/** The orchestration extras of a release item: whatever it holds beyond the release's fields, keys and views. */
export function extrasOf(item: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(item).filter(([k]) => !RESERVED.has(k)));
}

/** The tasks of a task view item, or null when the release has none (written before the view existed). */
export function viewTasks(item: Record<string, unknown> | undefined, releaseId: string): Task[] | null {
  if (item?.taskView === undefined) return null;
  const view = z.parse(taskViewSchema, item.taskView);
  return Object.entries(view).map(([id, v]) => ({
    id,
    releaseId,
    taskServiceId: v.ts,
    serviceName: v.n,
    state: v.s,
    progress: v.p,
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
  for (const item of items) {
    const sk = String(item.sk);
    if (sk === 'RE') {
      release = decode(releaseSchema, item);
      extras = extrasOf(item);
    } else if (sk === 'RE#V') view = item;
    else if (sk.startsWith('TA#')) tasks.push(decode(taskSchema, item));
    else if (sk.startsWith('RN#')) notes.push(decode(releaseNoteSchema, item));
  }
  if (!release) return null;
  const viewed = viewTasks(view, release.id);
  if (viewed) tasks = viewed;
  return { release, tasks: tasks.sort(oldestFirst), notes: notes.sort(oldestFirst), extras };
}
