import { ForbiddenError } from '../shared/errors.js';
import type { TaskServiceRepository } from './ports.js';

/**
 * Who is writing, as the coordinator's use cases judge it: an admin may always; anyone else acts as `identity`
 * (the token's `client_id` claim, else its `sub`: functions/shared/auth.ts).
 */
export interface Actor {
  isAdmin: boolean;
  identity: string | null;
}

/**
 * A task service bound to a client (`client_id`) accepts writes about it - its tasks' callbacks, events naming it
 * or its tasks - only from that client or an admin (403 otherwise). An unbound service keeps the spec's behaviour:
 * any service token may. A service that no longer exists binds nothing.
 */
export async function requireActsFor(
  deps: { taskServices: Pick<TaskServiceRepository, 'get'> },
  actor: Actor,
  taskServiceId: string,
  what: string,
): Promise<void> {
  if (actor.isAdmin) return;
  const service = await deps.taskServices.get(taskServiceId);
  if (!service?.clientId || service.clientId === actor.identity) return;
  throw new ForbiddenError(
    `${what} belongs to task service ${taskServiceId}, which is bound to another client; only that client or an admin may write it`,
  );
}
