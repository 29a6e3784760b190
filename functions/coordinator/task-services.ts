import { ConflictError, NotFoundError, ValidationError } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import type { TaskService } from './model.js';
import type { Paged, TaskReads, TaskServiceClient, TaskServiceRepository } from './ports.js';
import { checkServiceUrl, type UrlPolicy } from './url-policy.js';

export interface TaskServiceDeps {
  taskServices: TaskServiceRepository;
  releases: TaskReads;
  taskServiceClient: TaskServiceClient;
  probeTimeoutMs: number;
  /** Which URLs may be registered (and called): see url-policy.ts. */
  urlPolicy: UrlPolicy;
  /** TASK_SERVICE_CLIENT_REQUIRED: every service must name the client whose tokens act for it. */
  clientRequired: boolean;
}

/** GET {url}/status must answer 200 with a JSON object that has a string name; otherwise a 400 saying why. */
async function probe(deps: TaskServiceDeps, url: string): Promise<void> {
  const out = await deps.taskServiceClient.status(url, deps.probeTimeoutMs);
  if (out.ok) return;
  // The URL policy refused the address the host resolves to: say which rule, as for a literal address.
  if (out.failure.kind === 'refused')
    throw new ValidationError(`Task service at ${url} was not called: ${out.failure.message}`, {
      url: [out.failure.message],
    });
  const why =
    out.failure.kind === 'timeout'
      ? `timed out after ${deps.probeTimeoutMs} ms`
      : out.failure.kind === 'status'
        ? `answered status ${out.failure.status}`
        : out.failure.message;
  throw new ValidationError(`Task service at ${url} did not pass the GET /status check: ${why}`, {
    url: [`GET ${url}/status ${why}`],
  });
}

export interface NewTaskService {
  name: string;
  description: string;
  author: string;
  url: string;
  enabled: boolean;
  /** The OAuth client (or subject) whose tokens act for the service; null leaves it unbound. */
  clientId: string | null;
}

const CLIENT_REQUIRED =
  'is required: TASK_SERVICE_CLIENT_REQUIRED=true binds every task service to the OAuth client that acts for it';

export async function registerTaskService(
  deps: TaskServiceDeps,
  input: NewTaskService,
): Promise<TaskService> {
  if (deps.clientRequired && !input.clientId) throw ValidationError.field('client_id', CLIENT_REQUIRED);
  const url = checkServiceUrl(input.url, deps.urlPolicy);
  await probe(deps, url);
  return deps.taskServices.create({ ...input, url, healthStatus: 'ok', lastOkStatus: 0 });
}

export async function getTaskService(
  deps: Pick<TaskServiceDeps, 'taskServices'>,
  id: string,
): Promise<TaskService> {
  const s = await deps.taskServices.get(id);
  if (!s) throw new NotFoundError(`Task service ${id} not found`);
  return s;
}

export function listTaskServices(
  deps: Pick<TaskServiceDeps, 'taskServices'>,
  filters: { enabled?: boolean },
  page: Page,
): Promise<Paged<TaskService>> {
  return deps.taskServices.list(filters, page);
}

export async function updateTaskService(
  deps: TaskServiceDeps,
  id: string,
  patch: Partial<NewTaskService>,
): Promise<TaskService> {
  if (deps.clientRequired && patch.clientId === null)
    throw ValidationError.field('client_id', CLIENT_REQUIRED);
  const current = await getTaskService(deps, id);
  let url: string | undefined;
  if (patch.url !== undefined) {
    url = checkServiceUrl(patch.url, deps.urlPolicy);
    // A URL in the body is checked again, so a PATCH never stores an address that does not answer.
    await probe(deps, url);
  }
  const updated = await deps.taskServices.update(current.id, { ...patch, url });
  if (!updated) throw new NotFoundError(`Task service ${id} not found`);
  return updated;
}

/**
 * 409 while any of the service's tasks belongs to a release that is not terminal. The delete is conditioned on the
 * registry guard read before the check, so a release created meanwhile makes us check again.
 */
export async function deleteTaskService(deps: TaskServiceDeps, id: string): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const guard = await deps.taskServices.readGuard();
    if (!(await deps.taskServices.get(id))) throw new NotFoundError(`Task service ${id} not found`);
    // Only releases in flight can hold the service: their index is read, not the service's whole history.
    const busy = [...new Set((await deps.releases.activeTasksOfService(id)).map((t) => t.releaseId))];
    if (busy.length)
      throw new ConflictError(
        `Task service ${id} has tasks in release(s) that are not finished: ${busy.join(', ')}`,
      );
    const out = await deps.taskServices.delete(id, guard);
    if (out === 'deleted') return;
    if (out === 'missing') throw new NotFoundError(`Task service ${id} not found`);
  }
  throw new ConflictError('Releases are being created concurrently; retry the delete');
}
