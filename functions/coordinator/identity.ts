import { ForbiddenError } from '../shared/errors.js';
import type { TaskServiceRepository } from './ports.js';

/**
 * Who is writing, as the coordinator's use cases judge it: an admin may always; anyone else acts as `identity`
 * (the token's `client_id` claim, else its `sub`: functions/shared/auth.ts).
 */
export interface Actor {
  isAdmin: boolean;
  identity: string | null;
  /**
   * The token was accepted only as a task service's own app client (functions/shared/auth.ts): it acts for the
   * service bound to its client id and for no other, bound or not.
   */
  boundClientOnly?: boolean;
}

/**
 * A task service bound to a client (`client_id`) accepts writes about it - its tasks' callbacks, events naming it
 * or its tasks - only from that client or an admin (403 otherwise). An unbound service keeps the spec's behaviour:
 * any service token may. A service that no longer exists binds nothing. A token accepted only as a task service's
 * own client (`boundClientOnly`) may write about the service bound to it alone: never about a service without a
 * client or one that no longer exists. The callback's write holds the same rule as a condition on the service item
 * (`bindingCheck`, functions/adapters/dynamodb/releases/reports.ts). Nobody but an admin writes about a quarantined
 * service (quarantine.ts).
 */
export async function requireActsFor(
  deps: { taskServices: Pick<TaskServiceRepository, 'get'> },
  actor: Actor,
  taskServiceId: string,
  what: string,
): Promise<void> {
  if (actor.isAdmin) return;
  const service = await deps.taskServices.get(taskServiceId);
  if (service?.quarantine) throw quarantinedService(what, taskServiceId);
  if (actor.boundClientOnly) {
    if (service?.clientId && service.clientId === actor.identity) return;
    throw new ForbiddenError(
      `${what} belongs to task service ${taskServiceId}, which is not bound to this client; a task service's own client may only write about its own service`,
    );
  }
  if (!service?.clientId || service.clientId === actor.identity) return;
  throw new ForbiddenError(
    `${what} belongs to task service ${taskServiceId}, which is bound to another client; only that client or an admin may write it`,
  );
}

/** The 403 of a write about a quarantined task service (its reports, events naming it) by anyone but an admin. */
export const quarantinedService = (what: string, taskServiceId: string) =>
  new ForbiddenError(
    `${what} belongs to task service ${taskServiceId}, which is quarantined: its reports and events are refused ` +
      'until an admin releases it (DELETE /task-services/<id>/quarantine)',
  );
