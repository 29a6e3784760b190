import type { NewEvent, Release, Task } from '../model.js';
import { compareVersions } from '../versions.js';
import { type ActiveAs, rejectedEvent, releaseState, taskState } from './mapping.js';
import { idOf, originalRelease, originalTask, read, timestamp } from './original.js';
import type { ImportStore, ReleaseWrite } from './ports.js';
import { fromStore, type ImportResult, NOT_A_TIMESTAMP, refused, repeated } from './results.js';

/**
 * POST /import/releases: releases with their tasks (the original lists each release with its tasks), after the task
 * services and studies. A release keeps its id, name, author, studies, tags, version, is_major and created_at; its
 * tasks keep theirs, with their progress and service name. States are mapped (mapping.ts). A release refused takes
 * its tasks with it; a task refused (an unknown state, a progress out of range) is left out of its release, which is
 * flagged. After the batch, the highest published version here is raised to the highest one imported, so the next
 * release continues the original's sequence.
 */

export interface ReleaseImportOptions {
  dryRun: boolean;
  /** What releases still active in the original become; without it they are refused. */
  activeAs?: ActiveAs;
}

interface Planned {
  at: number;
  write: ReleaseWrite;
  flags: string[];
  taskFlags: Map<string, string[]>;
  /** Results of the release's tasks left out before the write (refused, or repeated). */
  leftOut: ImportResult[];
}

/** A release refused for its state, which an earlier import may have brought here (with --active-as). */
interface Held {
  at: number;
  id: string;
  createdAt: string;
  state: string;
  taskIds: (string | null)[];
}

type Plan = { planned: Planned } | { results: ImportResult[]; held?: Held };

function plan(raw: unknown, at: number, opts: ReleaseImportOptions): Plan {
  const r = read(originalRelease, raw);
  if (!r.ok)
    return {
      results: [refused('release', idOf(raw), r.reason), ...taskIdsOf(raw, 'its release is malformed')],
    };
  const o = r.value;
  const createdAt = timestamp(o.created_at);
  const mapped = releaseState(o.state, opts.activeAs);
  const whyNot = !createdAt ? NOT_A_TIMESTAMP : mapped.ok ? null : mapped.reason;
  if (whyNot || !createdAt || !mapped.ok) {
    const tasks = taskIdsOf(raw, `its release ${o.kf_id} is refused`);
    return {
      results: [refused('release', o.kf_id, whyNot ?? ''), ...tasks],
      ...(createdAt
        ? { held: { at, id: o.kf_id, createdAt, state: o.state, taskIds: tasks.map((t) => t.id) } }
        : {}),
    };
  }
  const release: Release = {
    id: o.kf_id,
    name: o.name,
    description: o.description ?? '',
    state: mapped.state,
    studies: [...new Set(o.studies)],
    version: o.version,
    createdAt,
    tags: o.tags ?? [],
    author: o.author ?? '',
    isMajor: o.is_major ?? false,
  };
  const flags = mapped.was ? [`${mapped.was} in the original; imported as ${mapped.state}`] : [];
  const tasks: Task[] = [];
  const taskEvents = new Map<string, NewEvent[]>();
  const taskFlags = new Map<string, string[]>();
  const leftOut: ImportResult[] = [];
  const seen = new Set<string>();
  for (const rawTask of o.tasks) {
    const p = planTask(rawTask, o.kf_id, mapped.was ? opts.activeAs : undefined, seen);
    if ('result' in p) {
      leftOut.push(p.result);
      continue;
    }
    tasks.push(p.task);
    if (p.events) taskEvents.set(p.task.id, p.events);
    if (p.flags) taskFlags.set(p.task.id, p.flags);
  }
  const left = leftOut.filter((t) => t.outcome === 'refused').length;
  if (left) flags.push(`imported without ${left} refused task(s)`);
  return { planned: { at, write: { release, tasks, taskEvents }, flags, taskFlags, leftOut } };
}

type TaskPlan = { task: Task; events?: NewEvent[]; flags?: string[] } | { result: ImportResult };

/** One task of a release: mapped, or the result that says why it is left out (`seen`: the ids met before). */
function planTask(
  raw: unknown,
  releaseId: string,
  forcedTo: ActiveAs | undefined,
  seen: Set<string>,
): TaskPlan {
  const t = read(originalTask, raw);
  if (!t.ok) return { result: refused('task', idOf(raw), t.reason) };
  const o = t.value;
  if (seen.has(o.kf_id)) return { result: repeated('task', o.kf_id) };
  seen.add(o.kf_id);
  const createdAt = timestamp(o.created_at);
  const state = taskState(o.state, forcedTo);
  const progress = o.progress ?? 0;
  const why = !createdAt
    ? NOT_A_TIMESTAMP
    : !state.ok
      ? `${state.reason}: left out of release ${releaseId}`
      : o.release !== releaseId
        ? `names release ${o.release} but is listed under ${releaseId}`
        : progress < 0 || progress > 100
          ? `malformed: progress ${progress} is outside 0-100`
          : null;
  if (why || !createdAt || !state.ok) return { result: refused('task', o.kf_id, why ?? '') };
  const task: Task = {
    id: o.kf_id,
    releaseId,
    taskServiceId: o.task_service,
    serviceName: o.service_name ?? '',
    state: state.state,
    progress,
    createdAt,
  };
  return {
    task,
    ...(state.was === 'rejected' ? { events: [rejectedEvent(o.kf_id, o.task_service)] } : {}),
    ...(state.was ? { flags: [`${state.was} in the original; imported as ${state.state}`] } : {}),
  };
}

/**
 * A release the original still drives that an earlier run brought here (with --active-as) is present, with its tasks,
 * not refused: a repeat without --active-as changes nothing and says so, and the release's notes and events, which
 * name it, can follow.
 */
async function heldHere(
  deps: { imports: ImportStore },
  held: Held[],
  slots: ImportResult[][],
): Promise<void> {
  if (!held.length) return;
  const here = await deps.imports.here('release', held);
  const back = held.filter((h) => here.get(h.id) === 'present');
  const pairs = back.flatMap((h) =>
    h.taskIds.flatMap((taskId) => (taskId ? [{ releaseId: h.id, taskId }] : [])),
  );
  const absent = await deps.imports.missingTasks(pairs);
  for (const h of back) {
    slots[h.at] = [
      {
        resource: 'release',
        id: h.id,
        outcome: 'present',
        flags: [`still ${h.state} in the original; imported before`],
      },
      ...h.taskIds.map(
        (id): ImportResult =>
          id && !absent.has(`${h.id}#${id}`)
            ? { resource: 'task', id, outcome: 'present' }
            : refused(
                'task',
                id,
                `not imported with its release ${h.id}, which is still ${h.state} in the original`,
              ),
      ),
    ];
  }
}

/** Results for the tasks of a release that is refused, read as far as they can be. */
function taskIdsOf(raw: unknown, reason: string): ImportResult[] {
  const tasks = (raw as { tasks?: unknown } | null)?.tasks;
  return Array.isArray(tasks) ? tasks.map((t) => refused('task', idOf(t), reason)) : [];
}

export async function importReleases(
  deps: { imports: ImportStore },
  raws: readonly unknown[],
  opts: ReleaseImportOptions,
): Promise<ImportResult[]> {
  const slots: ImportResult[][] = new Array(raws.length);
  const planned: Planned[] = [];
  const held: Held[] = [];
  const seen = new Set<string>();
  raws.forEach((raw, at) => {
    const p = plan(raw, at, opts);
    if ('results' in p) {
      slots[at] = p.results;
      if (p.held) held.push(p.held);
    } else if (seen.has(p.planned.write.release.id))
      slots[at] = [repeated('release', p.planned.write.release.id)];
    else {
      seen.add(p.planned.write.release.id);
      planned.push(p.planned);
    }
  });
  await heldHere(deps, held, slots);
  await flagMissing(deps, planned, opts.dryRun);
  const outcomes = await deps.imports.writeReleases(
    planned.map((p) => p.write),
    opts.dryRun,
  );
  let highest: { version: string; releaseId: string } | null = null;
  planned.forEach((p, i) => {
    const o = outcomes[i];
    const { release, tasks } = p.write;
    slots[p.at] = [
      fromStore('release', o.release, p.flags),
      ...tasks.map((t, j) => fromStore('task', o.tasks[j], p.taskFlags.get(t.id))),
      ...p.leftOut,
    ];
    if (o.release.status !== 'taken' && release.state === 'published')
      if (!highest || compareVersions(release.version, highest.version) > 0)
        highest = { version: release.version, releaseId: release.id };
  });
  const top = highest as { version: string; releaseId: string } | null;
  if (top && !opts.dryRun) await deps.imports.raiseHighestPublished(top.version, top.releaseId);
  return slots.flat();
}

/**
 * Flags (never refuses) what a release or task names that is not here: a study (its timeline is kept anyway), a task
 * service (the task keeps the service's id and name). In a dry run nothing is written, so what the run would write
 * first is not here yet: nothing is flagged then.
 */
async function flagMissing(
  deps: { imports: ImportStore },
  planned: Planned[],
  dryRun: boolean,
): Promise<void> {
  if (dryRun || planned.length === 0) return;
  const studies = planned.flatMap((p) => p.write.release.studies);
  const services = planned.flatMap((p) => p.write.tasks.map((t) => t.taskServiceId));
  const [noStudy, noService] = await Promise.all([
    deps.imports.missing('study', [...new Set(studies)]),
    deps.imports.missing('task_service', [...new Set(services)]),
  ]);
  for (const p of planned) {
    for (const s of p.write.release.studies)
      if (noStudy.has(s)) p.flags.push(`study ${s} is not here; the release is in its timeline all the same`);
    for (const t of p.write.tasks)
      if (noService.has(t.taskServiceId))
        p.taskFlags.set(t.id, [
          ...(p.taskFlags.get(t.id) ?? []),
          `task service ${t.taskServiceId} (${t.serviceName || 'no name'}) is not here; the task is imported with its name`,
        ]);
  }
}
