import { NotFoundError } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import type { Task, TaskState } from './model.js';
import type { Paged, ReleaseRepository } from './ports.js';

export async function getTask(deps: { releases: ReleaseRepository }, id: string): Promise<Task> {
  const t = await deps.releases.getTask(id);
  if (!t) throw new NotFoundError(`Task ${id} not found`);
  return t;
}

export function listTasks(
  deps: { releases: ReleaseRepository },
  filters: { releaseId?: string; taskServiceId?: string; state?: TaskState },
  page: Page,
): Promise<Paged<Task>> {
  return deps.releases.listTasks(filters, page);
}
