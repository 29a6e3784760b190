import type { TaskState } from '#packages/task-service/src/protocol.js';
import type { NewEvent, Release, ReleaseState, Task } from './model.js';

/**
 * The events the coordinator writes itself, with the spec's message formats. Every state change writes one of these
 * in the same transaction (ReleaseChange.events). `failed` is an error, everything else info.
 */
export function releaseStateEvent(
  release: Pick<Release, 'id' | 'version'>,
  from: ReleaseState,
  to: ReleaseState,
): NewEvent {
  return {
    eventType: to === 'failed' ? 'error' : 'info',
    message: `release ${release.id}, version ${release.version} changed from ${from} to ${to}`,
    releaseId: release.id,
  };
}

export function taskStateEvent(
  task: Pick<Task, 'id' | 'releaseId' | 'taskServiceId'>,
  from: TaskState,
  to: TaskState,
): NewEvent {
  return {
    eventType: to === 'failed' ? 'error' : 'info',
    message: `task ${task.id} changed from ${from} to ${to}`,
    releaseId: task.releaseId,
    taskId: task.id,
    taskServiceId: task.taskServiceId,
  };
}

/** Written with a new release: it has no previous state. */
export function releaseCreatedEvent(release: Pick<Release, 'id' | 'version'>, taskCount: number): NewEvent {
  return {
    eventType: 'info',
    message: `release ${release.id}, version ${release.version} created in state initializing with ${taskCount} task(s)`,
    releaseId: release.id,
  };
}
