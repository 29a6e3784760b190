import type { TaskState } from '#packages/task-service/src/protocol.js';
import { failTasks } from '../orchestration/changes.js';
import { type Clock, nowIso, systemClock } from '../shared/clock.js';
import { ConflictError, NotFoundError } from '../shared/errors.js';
import { log } from '../shared/log.js';
import type { Quarantine, TaskService } from './model.js';
import type {
  EventPublisher,
  ReleaseChanges,
  ReleaseOrchestrator,
  ReleaseReads,
  ServiceClientProvisioner,
  TaskReads,
  TaskServiceRepository,
} from './ports.js';

/**
 * Quarantine isolates a task service that misbehaves (or whose credentials leaked), at once and for every release:
 *
 * 1. the service is disabled and marked quarantined, in one write: from then on its reports and events are refused
 *    (a condition on this item, checked by every callback's transaction: functions/adapters/dynamodb/releases/
 *    reports.ts), and the coordinator never calls it again (no action, no cancel, no health check);
 * 2. its tasks in releases that are not over (pending, running, staged, publishing) fail with the reason, and their
 *    releases are canceled as for any failure (the other services get `cancel`); a published task stays published;
 * 3. its client, if the coordinator made it (`create_client`), gets a new secret that nobody is told: the old one
 *    mints no more tokens. A client-credentials token has no refresh token, so there is nothing for Cognito's
 *    RevokeToken to revoke; tokens already issued expire on their own, and the coordinator refuses them meanwhile.
 *    A client the coordinator did not make is the identity provider administrator's to disable (the answer says so).
 *
 * Releasing it (DELETE) lifts the mark, enables the service again if it was enabled before, and gives a client the
 * coordinator made a new secret, answered once. Failed tasks stay failed: their releases are over.
 */
export interface QuarantineDeps {
  taskServices: TaskServiceRepository;
  releases: ReleaseReads & ReleaseChanges & TaskReads;
  publisher: EventPublisher;
  orchestrator: Pick<ReleaseOrchestrator, 'drive'>;
  clients?: ServiceClientProvisioner | null;
  clock?: Clock;
}

/** The task states a quarantine fails: every one that is not final. */
const NOT_FINAL: readonly TaskState[] = ['pending', 'running', 'staged', 'publishing'];

/** What happened to the service's client: its secret replaced, or left to the identity provider's administrator. */
export type ClientOutcome =
  | { clientId: string; action: 'secret_replaced' }
  | { clientId: string; action: 'not_managed' }
  | { clientId: null; action: 'none' };

export interface Quarantined {
  service: TaskService;
  /** The tasks failed by this request (none when they had all ended, or on a repeat). */
  failedTasks: { taskId: string; releaseId: string }[];
  client: ClientOutcome;
}

export async function quarantineTaskService(
  deps: QuarantineDeps,
  id: string,
  input: { reason: string; by: string | null },
): Promise<Quarantined> {
  const current = await deps.taskServices.get(id);
  if (!current) throw new NotFoundError(`Task service ${id} not found`);
  const quarantine: Quarantine = current.quarantine ?? {
    reason: input.reason,
    at: nowIso(deps.clock ?? systemClock),
    by: input.by,
    wasEnabled: current.enabled,
  };
  // First the mark: every report after this write is refused, so none lands between the failures below.
  const service = current.quarantine
    ? current
    : await deps.taskServices.update(id, { enabled: false, quarantine });
  if (!service) throw new NotFoundError(`Task service ${id} not found`);
  log.warn('task service quarantined', { taskServiceId: id, reason: quarantine.reason, by: quarantine.by });
  const failedTasks = await failTasksOf(deps, service, quarantine);
  // A repeat replaces nothing: the secret made by the first quarantine is already nobody's.
  const client = current.quarantine
    ? await clientOf(deps, service, false)
    : await clientOf(deps, service, true);
  return { service, failedTasks, client: client.outcome };
}

/** Every task of the service that is not final fails; each release touched is canceled and driven. */
async function failTasksOf(
  deps: QuarantineDeps,
  service: TaskService,
  q: Quarantine,
): Promise<Quarantined['failedTasks']> {
  const reason =
    `task service "${service.name}" (${service.id}) was quarantined by ${q.by ?? 'an admin'}` +
    (q.reason ? `: ${q.reason}` : '');
  const tasks = await deps.releases.activeTasksOfService(service.id, NOT_FINAL);
  const byRelease = new Map<string, string[]>();
  for (const t of tasks) byRelease.set(t.releaseId, [...(byRelease.get(t.releaseId) ?? []), t.id]);
  const failed: Quarantined['failedTasks'] = [];
  for (const [releaseId, taskIds] of byRelease) {
    const outcome = await failTasks(
      deps,
      releaseId,
      taskIds.map((taskId) => ({ taskId, reason, onlyFrom: NOT_FINAL })),
    );
    if (outcome !== 'canceling') continue;
    failed.push(...taskIds.map((taskId) => ({ taskId, releaseId })));
    await deps.orchestrator.drive(releaseId);
  }
  return failed;
}

/**
 * The service's client: a client the coordinator made gets a new secret (`replace`), answered to the caller only
 * when the quarantine is lifted. Failing to reach the identity provider does not undo the quarantine: the log says
 * which client to see to by hand.
 */
async function clientOf(
  deps: QuarantineDeps,
  service: TaskService,
  replace: boolean,
): Promise<{ outcome: ClientOutcome; secret: string | null }> {
  const made = (await deps.taskServices.credentials(service.id))?.createdClientId ?? null;
  if (made && deps.clients) {
    if (!replace) return { outcome: { clientId: made, action: 'secret_replaced' }, secret: null };
    const { clientSecret } = await deps.clients.replaceSecret(made);
    return { outcome: { clientId: made, action: 'secret_replaced' }, secret: clientSecret };
  }
  if (service.clientId)
    return { outcome: { clientId: service.clientId, action: 'not_managed' }, secret: null };
  return { outcome: { clientId: null, action: 'none' }, secret: null };
}

export interface Released {
  service: TaskService;
  /** The new secret of the client the coordinator made for the service (shown this once); null otherwise. */
  clientSecret: string | null;
}

/** DELETE /task-services/<id>/quarantine: lifts it (a service that is not quarantined is a 409). */
export async function releaseTaskService(deps: QuarantineDeps, id: string): Promise<Released> {
  const current = await deps.taskServices.get(id);
  if (!current) throw new NotFoundError(`Task service ${id} not found`);
  if (!current.quarantine) throw new ConflictError(`Task service ${id} is not quarantined`);
  // The secret first: a service released with a client it cannot use would be released for nothing.
  const client = await clientOf(deps, current, true);
  const service = await deps.taskServices.update(id, {
    quarantine: null,
    enabled: current.quarantine.wasEnabled,
  });
  if (!service) throw new NotFoundError(`Task service ${id} not found`);
  log.info('task service released from quarantine', { taskServiceId: id });
  return { service, clientSecret: client.secret };
}
