import type { TaskState } from '#packages/task-service/src/protocol.js';
import { ForbiddenError, NotFoundError } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import type { Task } from './model.js';
import type { Paged, TaskReads, TaskServiceRepository } from './ports.js';

/**
 * Who reads a task, as the read rule judges it (docs/security.md, "A task service reads its own tasks"): an admin,
 * a `service` token (role service, identity its `client_id` or `sub`), a task service's own app client
 * (`boundClientOnly`), or any other valid token (a reader).
 */
export interface TaskReader {
  isAdmin: boolean;
  isService: boolean;
  identity: string | null;
  boundClientOnly?: boolean;
}

type Deps = { releases: TaskReads; taskServices: Pick<TaskServiceRepository, 'get'> };

/**
 * A task service reads its own tasks, and a token that speaks for one service reads no other's: a service's own
 * app client only the tasks of the service bound to it; a `service` token those of unbound services and of the
 * services bound to it, as for its reports (functions/coordinator/identity.ts). Admins and readers are not held.
 */
async function requireReads(deps: Deps, reader: TaskReader, taskServiceId: string, what: string) {
  if (reader.isAdmin || (!reader.isService && !reader.boundClientOnly)) return;
  const service = await deps.taskServices.get(taskServiceId);
  const bound = service?.clientId ?? null;
  if (
    reader.boundClientOnly ? bound !== null && bound === reader.identity : !bound || bound === reader.identity
  )
    return;
  throw new ForbiddenError(
    `${what} belongs to task service ${taskServiceId}, which is not bound to this client; a task service reads its own tasks only`,
  );
}

export async function getTask(deps: Deps, id: string, reader?: TaskReader): Promise<Task> {
  const t = await deps.releases.getTask(id);
  if (!t) throw new NotFoundError(`Task ${id} not found`);
  if (reader) await requireReads(deps, reader, t.taskServiceId, `Task ${id}`);
  return t;
}

export async function listTasks(
  deps: Deps,
  filters: { releaseId?: string; taskServiceId?: string; state?: TaskState },
  page: Page,
  reader?: TaskReader,
): Promise<Paged<Task>> {
  if (reader?.boundClientOnly && !filters.taskServiceId)
    throw new ForbiddenError(
      "A task service's own client lists its own tasks only: name its service with task_service=<its id>",
    );
  if (reader && filters.taskServiceId)
    await requireReads(deps, reader, filters.taskServiceId, `The tasks of ${filters.taskServiceId}`);
  return deps.releases.listTasks(filters, page);
}
