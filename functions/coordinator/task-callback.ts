import { failTasks } from '../orchestration/changes.js';
import { ConflictError, ValidationError } from '../shared/errors.js';
import { MAX_LIMIT } from '../shared/list.js';
import { taskStateEvent } from './event-messages.js';
import { type Actor, requireActsFor } from './identity.js';
import type { ReleaseState, Task, TaskState } from './model.js';
import {
  type EventPublisher,
  isChangeConflict,
  type ReleaseChanges,
  type ReleaseOrchestrator,
  type ReleaseReads,
  type TaskReads,
  type TaskServiceRepository,
} from './ports.js';
import { getTask } from './tasks.js';

/**
 * PATCH /tasks/<id>: a task service reports its task's state and progress. Only the transitions below are
 * accepted (anything else is a 409); repeating the current state only updates the progress. The write is conditioned
 * on the state we read, and carries the task's state-change event.
 */
export const TASK_TRANSITIONS: Record<TaskState, readonly TaskState[]> = {
  // pending -> staged and staged -> published: a fast service reports the end of its work before the coordinator
  // has recorded the reply to start (running) or publish (publishing).
  pending: ['running', 'staged', 'failed', 'canceled'],
  running: ['staged', 'failed', 'canceled'],
  staged: ['publishing', 'published', 'failed', 'canceled'],
  publishing: ['published', 'failed', 'canceled'],
  published: [],
  canceled: [],
  failed: [],
};

/**
 * What a task may report while its release is in each phase. A task that reports a later phase's state early would
 * wedge the release (it waits for every task to be `staged`, and a `published` task never is again), so anything
 * else is a 409 that lists these. `failed` / `canceled` end the task and take the release with them in any phase
 * that is not over; nothing changes once the release is.
 */
export const CALLBACK_STATES_BY_PHASE: Record<ReleaseState, readonly TaskState[]> = {
  initializing: ['running', 'staged', 'failed', 'canceled'],
  running: ['running', 'staged', 'failed', 'canceled'],
  staged: ['staged', 'failed', 'canceled'],
  publishing: ['publishing', 'published', 'failed', 'canceled'],
  canceling: ['canceled', 'failed'],
  published: [],
  canceled: [],
  failed: [],
};

/** States a task service reports that the release's poll loop should react to at once. */
export const WAKING_STATES: readonly TaskState[] = ['staged', 'published', 'failed', 'canceled'];

export interface TaskReport {
  state?: TaskState;
  progress?: number;
}

export interface TaskCallbackDeps {
  releases: ReleaseReads & ReleaseChanges & TaskReads;
  taskServices: Pick<TaskServiceRepository, 'get'>;
  orchestrator: ReleaseOrchestrator;
  publisher: EventPublisher;
}

/** progress may be an integer or a percent string ("50%"); stored as an integer 0..100. */
export function parseProgress(v: unknown): number {
  const n =
    typeof v === 'number'
      ? v
      : typeof v === 'string' && /^\s*\d+(\.\d+)?\s*%?\s*$/.test(v)
        ? Number(v.replace('%', '').trim())
        : Number.NaN;
  if (!Number.isFinite(n) || n < 0 || n > 100)
    throw ValidationError.field(
      'progress',
      'must be an integer from 0 to 100, or a percent string like "50%"',
    );
  return Math.round(n);
}

/**
 * Whether this report was the last one the release's phase waited for (every task now `staged`, or every task
 * `published`). Only then is the poll loop woken: earlier reports would each buy a poll round (state transitions,
 * which Step Functions bills) without letting the release move; polling stays the safety net. The read comes after
 * our own write and is strongly consistent, so of two last reports landing together at least one sees both.
 */
async function completesPhase(deps: TaskCallbackDeps, releaseId: string, to: TaskState): Promise<boolean> {
  // The release's tasks from its task view (one GetItem), not the whole release: the callback's reads are most of
  // what 1,000 concurrent callbacks wait for (bench:txcost). A release holds at most MAX_TASKS_PER_RELEASE tasks, so
  // one page of MAX_LIMIT is all of them.
  const tasks = await deps.releases.listTasks({ releaseId }, { limit: MAX_LIMIT, offset: 0 });
  return tasks.count > 0 && tasks.items.every((t) => t.state === to);
}

export async function reportTask(
  deps: TaskCallbackDeps,
  id: string,
  report: TaskReport,
  actor: Actor,
): Promise<Task> {
  if (report.state === undefined && report.progress === undefined)
    throw new ValidationError('Nothing to change', { state: ['state or progress is required'] });
  let lost: unknown;
  for (let attempt = 0; attempt < 8; attempt++) {
    // A report races the orchestration's own writes of the same task (e.g. the reply to start being recorded while
    // a fast service already reports staged): read again after a short, jittered pause rather than answer 409.
    if (attempt > 0) await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));
    const task = await getTask(deps, id);
    if (attempt === 0) await requireActsFor(deps, actor, task.taskServiceId, `Task ${id}`);
    const to = report.state ?? task.state;
    const changes = to !== task.state;
    if (changes && !TASK_TRANSITIONS[task.state].includes(to))
      throw new ConflictError(`Task ${id} may not change from ${task.state} to ${to}`);
    if (changes) {
      // A read, not a condition in the write: a release only moves forward through its phases (or to canceling),
      // and no phase can be reached while this task still has to report, so the phase read here cannot be
      // overtaken by one that forbids `to`. A condition on the release item would make every callback of a release
      // conflict with every other (DynamoDB cancels transactions that touch the same item concurrently).
      const phase = await deps.releases.stateOf(task.releaseId);
      const allowed = phase ? CALLBACK_STATES_BY_PHASE[phase] : [];
      // The task may have moved on between the two reads (the orchestration recorded the same news from a poll and
      // moved the release with it): judge the report again against the task as it is now.
      if ((!phase || !allowed.includes(to)) && (await getTask(deps, id)).state !== task.state) continue;
      if (!phase || !allowed.includes(to))
        throw new ConflictError(
          `Task ${id} may not become ${to} while its release is ${phase ?? 'missing'}; allowed states now: ${allowed.length ? allowed.join(', ') : 'none (the release is over)'}`,
        );
    }
    const progress = report.progress ?? task.progress;
    if (changes && (to === 'failed' || to === 'canceled')) {
      // The task's end takes its release with it (issue 3, Failures): task failed/canceled and release canceling
      // in one transaction; the execution then cancels the other tasks.
      const outcome = await failTasks(
        { releases: deps.releases, publisher: deps.publisher },
        task.releaseId,
        [
          {
            taskId: id,
            to,
            onlyFrom: [task.state],
            reason: `task service "${task.serviceName}" (${task.taskServiceId}) reported it ${to} (PATCH /tasks/${id})`,
          },
        ],
      );
      if (outcome === 'unchanged') continue; // reported concurrently: judge against the new state
      if (outcome === 'canceling') await deps.orchestrator.drive(task.releaseId);
      return getTask(deps, id);
    }
    try {
      const written = await deps.releases.applyChange({
        releaseId: task.releaseId,
        tasks: [{ taskId: id, expectState: task.state, toState: changes ? to : undefined, progress }],
        events: changes ? [taskStateEvent(task, task.state, to)] : [],
      });
      await deps.publisher.publish(written);
    } catch (err) {
      if (!isChangeConflict(err)) throw err;
      lost = err; // reported concurrently: judge against the new state
      continue;
    }
    if (changes && WAKING_STATES.includes(to) && (await completesPhase(deps, task.releaseId, to)))
      await deps.orchestrator.wake(task.releaseId);
    return { ...task, state: to, progress };
  }
  throw new ConflictError(`Task ${id} is changing concurrently; retry`, { cause: lost });
}
