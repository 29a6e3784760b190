import { TASK_STATES, type TaskState } from '#packages/task-service/src/protocol.js';
import type { NewEvent, ReleaseState } from '../model.js';

/**
 * How the original's states become this coordinator's (docs/migrating.md has the table). Releases the original is
 * still driving are never taken over: they are refused, or, when the operator says so (`active_as`), ended here as
 * failed or canceled with their unfinished tasks. Everything else keeps its state where this coordinator has one of
 * that name; a state it has no name for (the original stored whatever its PATCH /tasks was sent) is refused.
 */

/** Release states of the original that mean it is still at work on the release (`waiting` included). */
export const ACTIVE_ORIGINAL_RELEASE_STATES = [
  'waiting',
  'initializing',
  'running',
  'staged',
  'publishing',
  'canceling',
] as const;
/** Release states that end a release, the same in both coordinators. */
const ENDED = ['published', 'canceled', 'failed'] as const;

/** What an active release (and its unfinished tasks) becomes with `--active-as`. */
export const ACTIVE_AS = ['failed', 'canceled'] as const;
export type ActiveAs = (typeof ACTIVE_AS)[number];

export type Mapped<S> = { ok: true; state: S; was?: string } | { ok: false; reason: string };

export function releaseState(original: string, activeAs: ActiveAs | undefined): Mapped<ReleaseState> {
  if ((ENDED as readonly string[]).includes(original)) return { ok: true, state: original as ReleaseState };
  if ((ACTIVE_ORIGINAL_RELEASE_STATES as readonly string[]).includes(original)) {
    if (activeAs) return { ok: true, state: activeAs, was: original };
    return {
      ok: false,
      reason:
        `still active in the original (${original}): let it end there, or import it with ` +
        '--active-as failed|canceled',
    };
  }
  return { ok: false, reason: `unknown release state "${original}"` };
}

/** Task states with no name here, and what they become. */
const RENAMED: Record<string, TaskState> = { waiting: 'pending', initialized: 'pending', rejected: 'failed' };
/** Task states that end a task's work: kept even when its release is ended by `--active-as`. */
const TASK_ENDED: readonly TaskState[] = ['published', 'canceled', 'failed'];

/**
 * A task's state here. `was` is set when the state changed for a reason worth keeping: `rejected` (named in an
 * event of the task, see rejectedEvent) or the release's `--active-as`.
 */
export function taskState(original: string, releaseForcedTo?: ActiveAs): Mapped<TaskState> {
  const named =
    RENAMED[original] ?? ((TASK_STATES as readonly string[]).includes(original) ? original : null);
  if (!named) return { ok: false, reason: `unknown task state "${original}"` };
  const state = named as TaskState;
  if (releaseForcedTo && !TASK_ENDED.includes(state))
    return { ok: true, state: releaseForcedTo, was: original };
  return original === 'rejected' ? { ok: true, state, was: original } : { ok: true, state };
}

/**
 * The event that keeps a rejected task's original state: it names the task and its service, not the release, so the
 * release's events stay exactly the original's.
 */
export function rejectedEvent(taskId: string, taskServiceId: string): NewEvent {
  return {
    eventType: 'warning',
    message: `task ${taskId} was rejected in the original coordinator; it is imported as failed`,
    taskId,
    taskServiceId,
    source: 'coordinator',
  };
}
