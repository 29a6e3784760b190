import type { TaskState } from '#packages/task-service/src/protocol.js';
import { NotFoundError } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import type { Task } from './model.js';
import type { Paged, TaskReads } from './ports.js';

export async function getTask(deps: { releases: TaskReads }, id: string): Promise<Task> {
  const t = await deps.releases.getTask(id);
  if (!t) throw new NotFoundError(`Task ${id} not found`);
  return t;
}

export function listTasks(
  deps: { releases: TaskReads },
  filters: { releaseId?: string; taskServiceId?: string; state?: TaskState },
  page: Page,
): Promise<Paged<Task>> {
  return deps.releases.listTasks(filters, page);
}
