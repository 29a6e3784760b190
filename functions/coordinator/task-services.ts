import { type Clock, isoMicros, systemClock } from '../shared/clock.js';
import { ConflictError, NotFoundError, ValidationError } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import { log } from '../shared/log.js';
import type { TaskService } from './model.js';
import type {
  Paged,
  ServiceClientProvisioner,
  TaskReads,
  TaskServiceClient,
  TaskServiceRepository,
} from './ports.js';
import { freshCredentials, newSigningSecret, type ServiceCredentials } from './service-credentials.js';
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
  /** Makes a client per service (`create_client`); null where the identity provider is not managed from here. */
  clients?: ServiceClientProvisioner | null;
  clock?: Clock;
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
  'is required: TASK_SERVICE_CLIENT_REQUIRED=true binds every task service to the OAuth client that acts for it' +
  ' (or give create_client: true)';

/** A registration's answer: the record, its signing secret and, with create_client, its client's secret, once. */
export interface Registered {
  service: TaskService;
  secret: string;
  clientSecret: string | null;
}

/**
 * Registers a service: URL policy, the GET /status probe, then (create_client) a client of its own at the identity
 * provider, then the record and its credentials in one transaction. A client made for a registration that then
 * fails is deleted again, so a failed registration leaves nothing behind.
 */
export async function registerTaskService(
  deps: TaskServiceDeps,
  input: NewTaskService & { createClient?: boolean },
): Promise<Registered> {
  const { createClient, ...fields } = input;
  if (createClient && fields.clientId)
    throw ValidationError.field(
      'client_id',
      'must not be given with create_client: true, which makes the client',
    );
  if (createClient && !deps.clients)
    throw ValidationError.field(
      'create_client',
      'this deployment cannot create clients: its identity provider is not managed by the coordinator',
    );
  if (deps.clientRequired && !fields.clientId && !createClient)
    throw ValidationError.field('client_id', CLIENT_REQUIRED);
  const url = checkServiceUrl(fields.url, deps.urlPolicy);
  await probe(deps, url);
  const client = createClient && deps.clients ? await deps.clients.create(fields.name) : null;
  const credentials = freshCredentials(client?.clientId ?? null);
  try {
    const service = await deps.taskServices.create(
      {
        ...fields,
        clientId: client?.clientId ?? fields.clientId,
        url,
        healthStatus: 'ok',
        lastOkStatus: 0,
      },
      credentials,
    );
    return { service, secret: credentials.signingSecret, clientSecret: client?.clientSecret ?? null };
  } catch (err) {
    if (client && deps.clients) await deleteClient(deps.clients, client.clientId, 'registration failed');
    throw err;
  }
}

/** Deletes a client the coordinator made; a failure is logged with the client's id (to remove by hand), not thrown. */
async function deleteClient(
  clients: ServiceClientProvisioner,
  clientId: string,
  why: string,
): Promise<boolean> {
  try {
    await clients.delete(clientId);
    return true;
  } catch (err) {
    log.error('could not delete the OAuth client made for a task service; delete it by hand', {
      clientId,
      why,
      error: err instanceof Error ? err.message : String(err),
    });
    return false;
  }
}

/** A rotation's answer: the record, the new secret, and until when the replaced one still signs (null: not at all). */
export interface Rotated {
  service: TaskService;
  secret: string;
  previousUntil: string | null;
}

/**
 * Gives the service a new signing secret. The one it replaces keeps signing for `graceSeconds` (actions then carry
 * both signatures, so the service verifies with either while its new secret is rolled out); a secret replaced before
 * is dropped. A service registered before signatures existed gets its first secret.
 */
export async function rotateSigningSecret(
  deps: Pick<TaskServiceDeps, 'taskServices' | 'clock'>,
  id: string,
  graceSeconds: number,
): Promise<Rotated> {
  const clock = deps.clock ?? systemClock;
  for (let attempt = 0; attempt < 5; attempt++) {
    const service = await getTaskService(deps, id);
    const current = await deps.taskServices.credentials(id);
    const now = clock.nowMs();
    const previousUntil = current && graceSeconds > 0 ? isoMicros(now + graceSeconds * 1000) : null;
    const next: ServiceCredentials = {
      signingSecret: newSigningSecret(),
      previousSigningSecret: previousUntil ? (current?.signingSecret ?? null) : null,
      previousUntil,
      createdClientId: current?.createdClientId ?? null,
      rotatedAt: isoMicros(now),
    };
    const out = await deps.taskServices.replaceCredentials(id, current, next);
    if (out === 'replaced') return { service, secret: next.signingSecret, previousUntil };
    if (out === 'missing') throw new NotFoundError(`Task service ${id} not found`);
  }
  throw new ConflictError('The secret was being rotated concurrently; retry');
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
  if (current.quarantine && patch.enabled === true)
    throw new ConflictError(
      `Task service ${id} is quarantined; release it first (DELETE /task-services/${id}/quarantine)`,
    );
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
    // Read before the delete, which removes them with the record.
    const credentials = await deps.taskServices.credentials(id);
    const out = await deps.taskServices.delete(id, guard);
    if (out === 'deleted') {
      // After the record is gone, so a delete that fails (a busy service) never leaves a service without its client.
      if (credentials?.createdClientId && deps.clients)
        await deleteClient(deps.clients, credentials.createdClientId, `task service ${id} deleted`);
      return;
    }
    if (out === 'missing') throw new NotFoundError(`Task service ${id} not found`);
  }
  throw new ConflictError('Releases are being created concurrently; retry the delete');
}
