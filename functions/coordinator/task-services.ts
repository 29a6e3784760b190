import { ConflictError, NotFoundError, ValidationError } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import { RELEASE_STATES, type TaskService, TERMINAL_RELEASE_STATES } from './model.js';
import type { Paged, ReleaseRepository, TaskServiceClient, TaskServiceRepository } from './ports.js';

export interface TaskServiceDeps {
  taskServices: TaskServiceRepository;
  releases: ReleaseRepository;
  taskServiceClient: TaskServiceClient;
  probeTimeoutMs: number;
}

/** http(s) only, no trailing slash: the stored form every action URL is built from. */
export function normalizeServiceUrl(raw: string): string {
  const trimmed = raw.trim();
  let parsed: URL;
  try {
    parsed = new URL(trimmed);
  } catch {
    throw ValidationError.field('url', 'must be an absolute http or https URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw ValidationError.field('url', 'must be an absolute http or https URL');
  if (parsed.search || parsed.hash) throw ValidationError.field('url', 'must not carry a query or fragment');
  return trimmed.replace(/\/+$/, '');
}

/** GET {url}/status must answer 200 with a JSON object that has a string name; otherwise a 400 saying why. */
async function probe(deps: TaskServiceDeps, url: string): Promise<void> {
  const out = await deps.taskServiceClient.status(url, deps.probeTimeoutMs);
  if (out.ok) return;
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
}

export async function registerTaskService(
  deps: TaskServiceDeps,
  input: NewTaskService,
): Promise<TaskService> {
  const url = normalizeServiceUrl(input.url);
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
  const current = await getTaskService(deps, id);
  let url: string | undefined;
  if (patch.url !== undefined) {
    url = normalizeServiceUrl(patch.url);
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
  const active = RELEASE_STATES.filter((s) => !TERMINAL_RELEASE_STATES.includes(s));
  for (let attempt = 0; attempt < 5; attempt++) {
    const guard = await deps.taskServices.readGuard();
    if (!(await deps.taskServices.get(id))) throw new NotFoundError(`Task service ${id} not found`);
    const tasks = await deps.releases.tasksOfService(id);
    if (tasks.length) {
      const inFlight = new Set((await deps.releases.listByStates(active)).map((r) => r.id));
      const busy = [...new Set(tasks.filter((t) => inFlight.has(t.releaseId)).map((t) => t.releaseId))];
      if (busy.length)
        throw new ConflictError(
          `Task service ${id} has tasks in release(s) that are not finished: ${busy.join(', ')}`,
        );
    }
    const out = await deps.taskServices.delete(id, guard);
    if (out === 'deleted') return;
    if (out === 'missing') throw new NotFoundError(`Task service ${id} not found`);
  }
  throw new ConflictError('Releases are being created concurrently; retry the delete');
}
