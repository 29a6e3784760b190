import { NotFoundError, ValidationError } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import type { CoordinatorEvent, NewEvent } from './model.js';
import type { EventFilters, EventPublisher, EventRepository, Paged, ReleaseRepository } from './ports.js';

type Deps = { events: EventRepository; releases: ReleaseRepository; publisher: EventPublisher };

/**
 * POST /events. Every referenced record must exist (400 naming the field otherwise); the checks ride in the same
 * transaction as the put. A task is stored under its release, so an event naming a task but no release costs one
 * lookup first.
 */
export async function createEvent(deps: Deps, input: NewEvent): Promise<CoordinatorEvent> {
  let taskReleaseId: string | undefined;
  if (input.taskId && !input.releaseId) {
    const task = await deps.releases.getTask(input.taskId);
    if (!task) throw ValidationError.field('task', `${input.taskId} does not exist`);
    taskReleaseId = task.releaseId;
  }
  const event = await deps.events.create(input, { taskReleaseId });
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
