import { CALLBACK_TRANSITIONS, type TaskState } from '#packages/task-service/src/protocol.js';
import { failTasks, isTransient } from '../orchestration/changes.js';
import {
  BusyError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  RetryableConflictError,
  ValidationError,
} from '../shared/errors.js';
import { taskStateEvent } from './event-messages.js';
import { type Actor, quarantinedService, requireActsFor } from './identity.js';
import { isTerminalRelease, RELEASE_STATES, type ReleaseState, type Task } from './model.js';
import {
  type EventPublisher,
  isChangeConflict,
  type ReleaseChanges,
  type ReleaseOrchestrator,
  type ReleaseReads,
  type ReportTarget,
  type TaskReads,
  type TaskReports,
  type TaskServiceRepository,
} from './ports.js';
import { getTask } from './tasks.js';

/*
 * PATCH /tasks/<id>: a task service reports its task's state and progress. Only the protocol's CALLBACK_TRANSITIONS
 * are accepted (anything else is a 409); repeating the current state only updates the progress. The write is
 * conditioned on the state we read, and carries the task's state-change event. Once the release is over (published,
 * canceled, failed) nothing is accepted, progress included, and a report that changes nothing too (409). While it is
 * live, a report of exactly the state and progress the task has is answered with the task and writes nothing, so
 * sending a report again after a 409 or 503 with Retry-After is safe.
 */

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

export interface TaskReport {
  state?: TaskState;
  progress?: number;
}

export interface TaskCallbackDeps {
  releases: ReleaseReads & ReleaseChanges & TaskReads & TaskReports;
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

/** The release states in which a task may report `to` (CALLBACK_STATES_BY_PHASE read the other way round). */
export const PHASES_ALLOWING = (to: TaskState): ReleaseState[] =>
  RELEASE_STATES.filter((phase) => CALLBACK_STATES_BY_PHASE[phase].includes(to));

/** Progress alone may change while the release is not over. */
const OPEN_PHASES: readonly ReleaseState[] = RELEASE_STATES.filter((s) => !isTerminalRelease(s));

/** How many times a report is judged again after the task moved under it before the caller is told to retry. */
const ATTEMPTS = 8;

/**
 * The report is judged against the task as the id index has it and written with conditions that stand in for the
 * reads it no longer makes (the task's state, the release's phase on the task view, the service's binding:
 * TaskReports). A condition that fails brings back what is true now, and the report is judged again. So a report
 * costs two DynamoDB round trips. The report that completes its release's phase does not wake the poll loop itself:
 * PhaseWatch sees the completed group on the table's stream and does (only then: earlier reports would each buy a
 * poll round, state transitions that Step Functions bills, without letting the release move; polling stays the
 * safety net). Conflicts with concurrent writers are retried with jittered backoff
 * inside the store; when they outlast every retry, or DynamoDB keeps throttling, the answer is a 409 or 503 with
 * `Retry-After`, which task services retry (docs/task-service-api.md).
 */
export async function reportTask(
  deps: TaskCallbackDeps,
  id: string,
  report: TaskReport,
  actor: Actor,
): Promise<Task> {
  if (report.state === undefined && report.progress === undefined)
    throw new ValidationError('Nothing to change', { state: ['state or progress is required'] });
  try {
    return await judgeAndWrite(deps, id, report, actor);
  } catch (err) {
    if (isChangeConflict(err) && err.failed.length === 0)
      throw new RetryableConflictError(`Task ${id} is changing concurrently; retry`, 1, { cause: err });
    if (!isAppErrorLike(err) && isTransient(err))
      throw new BusyError(`Task ${id} could not be written now; retry`, 1, { cause: err });
    throw err;
  }
}

const isAppErrorLike = (err: unknown) => typeof (err as { status?: unknown })?.status === 'number';

async function judgeAndWrite(
  deps: TaskCallbackDeps,
  id: string,
  report: TaskReport,
  actor: Actor,
): Promise<Task> {
  let target: ReportTarget | null = await deps.releases.reportTarget(id);
  // A report answered without a write (a refused transition, a no-op) reads the service's binding first, so such an
  // answer tells a caller who may not write the task nothing but that (403); a write carries the same rule as a
  // condition (TaskReports), so the hot path reads nothing more.
  let mayAct = false;
  const requireMayAct = async (task: Task) => {
    if (!mayAct) await requireActsFor(deps, actor, task.taskServiceId, `Task ${task.id}`);
    mayAct = true;
  };
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    if (!target) throw new NotFoundError(`Task ${id} not found`);
    const task = target.task;
    const to = report.state ?? task.state;
    const changes = to !== task.state;
    if (changes && !CALLBACK_TRANSITIONS[task.state].includes(to)) {
      // The id index may lag: refuse only on the task as it is.
      if (!target.confirmed) {
        target = await deps.releases.confirmTarget(target);
        continue;
      }
      await requireMayAct(task);
      throw new ConflictError(`Task ${id} may not change from ${task.state} to ${to}`);
    }
    const progress = report.progress ?? task.progress;
    if (!changes && progress === task.progress) {
      // A report of exactly what the task is (a report sent again after a Retry-After): nothing to write while the
      // release is live. Once it is over, every report is a 409, this one too. The index may lag and says nothing
      // of the release, so the task is confirmed first, with its release's state, in one read.
      await requireMayAct(task);
      if (!target.confirmed || target.phase === undefined) {
        target = await deps.releases.confirmTarget(target);
        continue;
      }
      if (isTerminalRelease(target.phase)) throw phaseConflict(id, to, false, target.phase);
      return task;
    }
    if (changes && (to === 'failed' || to === 'canceled')) {
      const failed = await reportEnd(deps, task, to, actor);
      if (failed) return failed;
      target = await deps.releases.confirmTarget(target); // reported concurrently: judge against the new state
      continue;
    }
    const outcome = await deps.releases.writeReport({
      target,
      toState: changes ? to : undefined,
      progress,
      events: changes ? [taskStateEvent(task, task.state, to)] : [],
      phases: changes ? PHASES_ALLOWING(to) : OPEN_PHASES,
      actor,
    });
    if (outcome.written) {
      await deps.publisher.publish(outcome.events);
      return { ...task, state: to, progress };
    }
    if (outcome.why === 'moved') {
      target = outcome.target;
      continue;
    }
    if (outcome.why === 'forbidden') throw forbidden(id, task.taskServiceId, actor);
    if (outcome.why === 'quarantined') throw quarantinedService(`Task ${id}`, task.taskServiceId);
    if (outcome.why === 'gone') throw new NotFoundError(`Task ${id} not found`);
    throw phaseConflict(id, to, changes, outcome.phase);
  }
  throw new RetryableConflictError(`Task ${id} is changing concurrently; retry`);
}

const forbidden = (id: string, serviceId: string, actor: Actor) =>
  new ForbiddenError(
    actor.boundClientOnly
      ? `Task ${id} belongs to task service ${serviceId}, which is not bound to this client; a task service's own client may only write about its own service`
      : `Task ${id} belongs to task service ${serviceId}, which is bound to another client; only that client or an admin may write it`,
  );

function phaseConflict(
  id: string,
  to: TaskState,
  changes: boolean,
  phase: ReleaseState | null,
): ConflictError {
  if (!phase || isTerminalRelease(phase))
    return new ConflictError(
      `Task ${id} belongs to a release that is ${phase ?? 'missing'}: nothing about its tasks changes any more`,
    );
  const allowed = CALLBACK_STATES_BY_PHASE[phase];
  return new ConflictError(
    changes
      ? `Task ${id} may not become ${to} while its release is ${phase}; allowed states now: ${allowed.join(', ')}`
      : `Task ${id} may not change while its release is ${phase}`,
  );
}

/**
 * A task service reports its task failed or canceled: the task's end takes its release with it
 * (docs/orchestration.md, Failures): task failed/canceled and release canceling in one transaction; the execution
 * then cancels the other tasks. Not the hot path (it reads the service and the release whole). Null when the task
 * moved meanwhile (judge again).
 */
async function reportEnd(
  deps: TaskCallbackDeps,
  task: Task,
  to: 'failed' | 'canceled',
  actor: Actor,
): Promise<Task | null> {
  await requireActsFor(deps, actor, task.taskServiceId, `Task ${task.id}`);
  const outcome = await failTasks({ releases: deps.releases, publisher: deps.publisher }, task.releaseId, [
    {
      taskId: task.id,
      to,
      onlyFrom: [task.state],
      reason: `task service "${task.serviceName}" (${task.taskServiceId}) reported it ${to} (PATCH /tasks/${task.id})`,
    },
  ]);
  if (outcome === 'unchanged') return null;
  if (outcome === 'terminal' || outcome === 'missing')
    throw phaseConflict(
      task.id,
      to,
      true,
      outcome === 'terminal' ? await deps.releases.stateOf(task.releaseId) : null,
    );
  await deps.orchestrator.drive(task.releaseId);
  return getTask(deps, task.id);
}
