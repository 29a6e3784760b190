import { END_STATES, type TaskState } from '#packages/task-service/src/protocol.js';
import { releaseStateEvent, taskStateEvent } from '../coordinator/event-messages.js';
import type { NewEvent, ReleaseAggregate, ReleaseState, Task } from '../coordinator/model.js';
import { isTerminalRelease, PUBLISH_REQUESTED_AT } from '../coordinator/model.js';
import {
  type ChangeConflictError,
  isChangeConflict,
  type ReleaseChange,
  type ReleaseChanges,
  type ReleaseReads,
  type TaskChange,
} from '../coordinator/ports.js';
import { type ErrorCause, type ErrorCode, hasCode, type OrchestrationErrorName } from '../shared/errors.js';
import { count, durationMs, METRIC } from '../shared/metrics.js';
import type { EventSink } from './ports.js';

/**
 * Writing release and task changes: every state change goes with its event in one TransactWriteItems
 * (ReleaseChanges.applyChange), and the stored events are then published (SNS / EventBridge, best effort).
 */

/** What writing a change needs: the release as stored, its change, and where its events go once written. */
export interface ChangeDeps {
  releases: ReleaseReads & ReleaseChanges;
  publisher: EventSink;
}

/**
 * A transient condition the state machine retries with backoff. The ASL's Retry matches Lambda errors by `name`,
 * so the name is a literal that minification cannot touch; code classifies it (`isTransient`).
 */
export class TransientError extends Error {
  override name: OrchestrationErrorName = 'Orchestration.Transient';
  readonly code: ErrorCode = 'transient';
  constructor(message: string, options?: ErrorCause) {
    super(message, options);
  }
}

/**
 * Errors that pass with time, by their stable codes and never by class name (the bundles are minified): ours
 * (`transient`; `token_unavailable` when the token endpoint fails), and AWS SDK throttling, 5xx and network errors.
 */
export function isTransient(err: unknown): boolean {
  const e = err as {
    name?: string;
    $retryable?: unknown;
    $metadata?: { httpStatusCode?: number };
    code?: string;
  };
  if (!e || typeof e !== 'object') return false;
  if (hasCode(e, 'transient') || hasCode(e, 'token_unavailable')) return true;
  if (e.$retryable) return true;
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined && status >= 500) return true;
  return [
    'ThrottlingException',
    'ProvisionedThroughputExceededException',
    'RequestLimitExceeded',
    'InternalServerError',
    'ServiceUnavailable',
    'TransactionConflictException',
    'TimeoutError',
    'ECONNREFUSED',
    'ECONNRESET',
    'ETIMEDOUT',
  ].some((n) => e.name === n || e.code === n);
}

export const isConflict = (err: unknown): err is ChangeConflictError => isChangeConflict(err);

/** DynamoDB's limit of items per transaction. */
const MAX_ITEMS = 100;

export interface TaskPart {
  change: TaskChange;
  events: NewEvent[];
}

/** The release's own part of a change: its state (with the condition), version, extras, events, guard, studies. */
export type ReleasePart = Omit<ReleaseChange, 'releaseId' | 'tasks'> & {
  /** The move this part makes, for the metrics recorded once it is committed (releaseMove sets it). */
  moved?: Moved;
};

interface Moved {
  to: ReleaseState;
  createdAt: string;
  publishRequestedAtMs?: number;
}

const MOVE_METRICS: Partial<Record<ReleaseState, string>> = {
  staged: METRIC.releasesStaged,
  published: METRIC.releasesPublished,
  failed: METRIC.releasesFailed,
  canceled: METRIC.releasesCanceled,
};

/** What a move of `agg` to `to` records once committed. */
export function movedOf(agg: ReleaseAggregate, to: ReleaseState): Moved {
  const requested = agg.extras[PUBLISH_REQUESTED_AT];
  return {
    to,
    createdAt: agg.release.createdAt,
    publishRequestedAtMs: typeof requested === 'number' ? requested : undefined,
  };
}

/** The counters and durations of a committed release move (functions/shared/metrics.ts). */
function recordMove(m: Moved, nowMs = Date.now()): void {
  const name = MOVE_METRICS[m.to];
  if (name) count(name);
  if (m.to === 'staged') durationMs(METRIC.timeToStaged, nowMs - Date.parse(m.createdAt));
  if (m.to === 'published' && m.publishRequestedAtMs !== undefined)
    durationMs(METRIC.timeToPublished, nowMs - m.publishRequestedAtMs);
}

/**
 * Items a change takes in its transaction (ReleaseChanges.applyChange): a task's update (which also counts the events
 * about the task), and per event its put and its task service's event count (each task names its own service); the
 * release item, the counter item the tasks and events of one change share (states moved from and to, all events),
 * the release's state counts, its task view's shards (8: a release move writes its state on each, and they count
 * the release's events) and its wake latch item (a move that clears the latch) are kept in SHARED_ITEMS whatever the
 * number of tasks.
 */
const SHARED_ITEMS = 16;
/** An event's own items: its put and its service's count, and with a study its key item and two more counts. */
const eventItems = (e: NewEvent) => 2 + (e.studyId ? 3 : 0);
const MOST_ITEMS_PER_EVENT = 5;
const taskItems = (p: TaskPart) => 1 + p.events.reduce((n, e) => n + eventItems(e), 0);
const releaseItems = (p: ReleasePart) =>
  (p.events ?? []).reduce((n, e) => n + eventItems(e), 0) +
  (p.claimVersion ? 2 : 0) + // claim + highest pointer
  (p.studies?.length ?? 0);

/**
 * Writes task changes and the release's change, for a release of any size. When everything fits in one transaction
 * (up to ~28 tasks with an event each), it is one; otherwise the tasks go first in chunks of at most 100 items, each
 * task with its event and counts in one of them and each chunk still conditioned on the release's expected state,
 * and the release's own change (its new state, version, guard) comes last, so the release never moves before its
 * tasks did. A chunk that lost a race, or a step that stopped between two chunks (a crash, a timeout), leaves earlier
 * chunks written: every task moved is a complete move, and the next step (or the same step again, re-driven by the
 * reconciler) plans from a fresh load, which sees them, and moves only the tasks still to move.
 */
export async function commit(
  deps: ChangeDeps,
  releaseId: string,
  tasks: TaskPart[],
  part: ReleasePart,
): Promise<void> {
  const { moved, ...whole } = part;
  // An event of the release's part about a task that moves goes with that task's move; the release's own events
  // stay with the release's change, as many as fit (its state change first), and the rest follow it.
  const byTask = new Map(tasks.map((t) => [t.change.taskId, t]));
  const own: NewEvent[] = [];
  const withTasks = new Map<string, NewEvent[]>();
  for (const e of whole.events ?? []) {
    const task = e.taskId ? byTask.get(e.taskId) : undefined;
    if (task) withTasks.set(task.change.taskId, [...(withTasks.get(task.change.taskId) ?? []), e]);
    else own.push(e);
  }
  const parts = tasks.map((t) => {
    const more = withTasks.get(t.change.taskId);
    return more ? { ...t, events: [...t.events, ...more] } : t;
  });
  const release: Omit<ReleasePart, 'moved'> = { ...whole, events: own };
  const expect = release.expectState;
  const chunks: TaskPart[][] = [];
  let current: TaskPart[] = [];
  let size = SHARED_ITEMS;
  for (const p of parts) {
    const n = taskItems(p);
    if (size + n > MAX_ITEMS) {
      chunks.push(current);
      current = [];
      size = SHARED_ITEMS;
    }
    current.push(p);
    size += n;
  }
  // Studies and events beyond what fits travel in follow-up changes (studies are idempotent: last_pub_* of this
  // publish; events are records of what happened, written once each).
  let studies = release.studies ?? [];
  let spill: typeof studies = [];
  let room = MAX_ITEMS - SHARED_ITEMS - releaseItems({ ...release, studies: [], events: [] });
  let fit = 0;
  while (fit < own.length && (fit === 0 || room >= eventItems(own[fit]))) room -= eventItems(own[fit++]);
  const events = own.slice(0, fit);
  const laterEvents = own.slice(fit);
  const fixed = SHARED_ITEMS + releaseItems({ ...release, studies: [], events });
  if (fixed + studies.length > MAX_ITEMS) {
    spill = studies.slice(MAX_ITEMS - fixed);
    studies = studies.slice(0, MAX_ITEMS - fixed);
  }
  const finalPart = { ...release, studies, events };
  if (size + releaseItems(finalPart) > MAX_ITEMS) {
    chunks.push(current);
    current = [];
  }
  const write = async (change: ReleaseChange) => {
    const written = await deps.releases.applyChange(change);
    await deps.publisher.publish(written);
  };
  for (const chunk of chunks) {
    if (chunk.length === 0) continue;
    await write({
      releaseId,
      expectState: expect,
      tasks: chunk.map((p) => p.change),
      events: chunk.flatMap((p) => p.events),
    });
  }
  await write({
    ...finalPart,
    releaseId,
    tasks: current.map((p) => p.change),
    events: [...current.flatMap((p) => p.events), ...finalPart.events],
  });
  if (moved) recordMove(moved);
  for (let i = 0; i < spill.length; i += MAX_ITEMS) {
    await write({ releaseId, studies: spill.slice(i, i + MAX_ITEMS) });
  }
  const perChange = Math.floor((MAX_ITEMS - SHARED_ITEMS) / MOST_ITEMS_PER_EVENT);
  for (let i = 0; i < laterEvents.length; i += perChange) {
    await write({ releaseId, events: laterEvents.slice(i, i + perChange) });
  }
}

/**
 * A task's state change with its event; an explanation is appended to the message (e.g. why it failed). `published`,
 * `canceled` and `failed` are final (docs/api.md, States): a change out of them is a bug in the caller, refused here
 * rather than written, so the record never says a published task was canceled.
 */
export function taskPart(task: Task, to: TaskState | undefined, progress?: number, why?: string): TaskPart {
  const events: NewEvent[] = [];
  if (to !== undefined && to !== task.state && END_STATES.includes(task.state))
    throw new Error(`task ${task.id} is ${task.state}, a final state: it may not become ${to}`);
  if (to !== undefined && to !== task.state) {
    const e = taskStateEvent(task, task.state, to);
    events.push(why ? { ...e, message: `${e.message}: ${why}` } : e);
  }
  return {
    change: {
      taskId: task.id,
      expectState: task.state,
      toState: to !== undefined && to !== task.state ? to : undefined,
      progress: progress !== undefined && progress !== task.progress ? progress : undefined,
    },
    events,
  };
}

export function releaseMove(
  agg: ReleaseAggregate,
  to: ReleaseState,
  extra: Partial<ReleasePart> = {},
): ReleasePart {
  const from = agg.release.state;
  return {
    ...extra,
    moved: movedOf(agg, to),
    expectState: from,
    toState: to,
    events: [releaseStateEvent(agg.release, from, to), ...(extra.events ?? [])],
  };
}

export interface TaskFailure {
  taskId: string;
  /** Why, in words an admin understands; it names the service and the action. */
  reason: string;
  /** Fail the task only if it is still in one of these states (health check: work in progress only). */
  onlyFrom?: readonly TaskState[];
  /** `canceled` when the task service itself reports the task canceled; the release then ends canceled. */
  to?: 'failed' | 'canceled';
}

export type FailOutcome = 'canceling' | 'terminal' | 'missing' | 'unchanged';

/**
 * The failure path (docs/orchestration.md, Failures): the failing tasks become `failed` with an error event naming task, service,
 * action and reason, and the release goes to `canceling` — all in one change. The execution then sends cancel to
 * the other tasks and ends the release `failed`. Used by the steps, PATCH /tasks (state failed) and the health check;
 * callers outside the execution wake it afterwards.
 */
export async function failTasks(
  deps: ChangeDeps,
  releaseId: string,
  failures: readonly TaskFailure[],
  loaded?: ReleaseAggregate,
  /** Events about the release itself, written with the change (e.g. why its phase ended). */
  releaseEvents: NewEvent[] = [],
): Promise<FailOutcome> {
  let lost: unknown;
  for (let attempt = 0; attempt < 6; attempt++) {
    const agg = attempt === 0 && loaded ? loaded : await deps.releases.load(releaseId);
    if (!agg) return 'missing';
    if (isTerminalRelease(agg.release.state)) return 'terminal';
    const byId = new Map(agg.tasks.map((t) => [t.id, t]));
    const parts: TaskPart[] = [];
    for (const f of failures) {
      const task = byId.get(f.taskId);
      // A final task keeps its state: a published one stays published when its release fails (docs/api.md).
      if (!task || END_STATES.includes(task.state)) continue;
      if (f.onlyFrom && !f.onlyFrom.includes(task.state)) continue;
      parts.push(taskPart(task, f.to ?? 'failed', undefined, f.reason));
    }
    if (parts.length === 0 && agg.release.state === 'canceling') return 'unchanged';
    if (parts.length === 0 && failures.length > 0 && failures.every((f) => f.onlyFrom)) return 'unchanged';
    const release =
      agg.release.state === 'canceling'
        ? { expectState: 'canceling' as const, events: releaseEvents }
        : releaseMove(agg, 'canceling', { events: releaseEvents });
    try {
      await commit(deps, releaseId, parts, release);
      return 'canceling';
    } catch (err) {
      if (!isConflict(err)) throw err;
      lost = err;
    }
  }
  throw new TransientError(`release ${releaseId} changed concurrently too often to record the failure`, {
    cause: lost,
  });
}
