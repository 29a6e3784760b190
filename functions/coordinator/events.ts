import { ForbiddenError, NotFoundError, ValidationError } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import { looksLikeStateChange } from './forged-messages.js';
import { type Actor, requireActsFor } from './identity.js';
import type { CoordinatorEvent, NewEvent } from './model.js';
import type {
  EventFilters,
  EventPublisher,
  EventRepository,
  Paged,
  TaskReads,
  TaskServiceRepository,
} from './ports.js';

type Deps = {
  events: EventRepository;
  releases: TaskReads;
  taskServices: Pick<TaskServiceRepository, 'get'>;
  publisher: EventPublisher;
};

/**
 * POST /events, written by a client (`source: client`). Every referenced record must exist (400 naming the field
 * otherwise); the checks ride in the same transaction as the put. A task is stored under its release, so an event
 * naming a task but no release costs one lookup first. An event about a task or task service bound to another client
 * is a 403 (identity.ts); a message that reads as a state change (forged-messages.ts) is a 400 naming `message`.
 */
export async function createEvent(deps: Deps, input: NewEvent, actor: Actor): Promise<CoordinatorEvent> {
  if (await looksLikeStateChange(input.message))
    throw ValidationError.field(
      'message',
      'has the form of a coordinator state change ("release <id>, version <v> changed from <a> to <b>" or "task <id> changed from <a> to <b>"), which only the coordinator writes',
    );
  if (actor.boundClientOnly && !input.taskId && !input.taskServiceId)
    throw new ForbiddenError(
      "A task service's own client may only post events that name its task or its task service (`task`, `task_service`)",
    );
  let taskReleaseId: string | undefined;
  if (input.taskId) {
    const task = await deps.releases.getTask(input.taskId);
    if (!task) throw ValidationError.field('task', `${input.taskId} does not exist`);
    if (!input.releaseId) taskReleaseId = task.releaseId;
    await requireActsFor(deps, actor, task.taskServiceId, `Task ${task.id}`);
  }
  if (input.taskServiceId) await requireActsFor(deps, actor, input.taskServiceId, 'The event');
  const event = await deps.events.create({ ...input, source: 'client' }, { taskReleaseId });
  await deps.publisher.publish([event]);
  return event;
}

export async function getEvent(deps: Pick<Deps, 'events'>, id: string): Promise<CoordinatorEvent> {
  const e = await deps.events.get(id);
  if (!e) throw new NotFoundError(`Event ${id} not found`);
  return e;
}

export async function deleteEvent(deps: Pick<Deps, 'events'>, id: string): Promise<void> {
  if (!(await deps.events.delete(id))) throw new NotFoundError(`Event ${id} not found`);
}

export function listEvents(
  deps: Pick<Deps, 'events'>,
  filters: EventFilters,
  page: Page,
): Promise<Paged<CoordinatorEvent>> {
  return deps.events.list(filters, page);
}
