import { AppError, ConflictError, NotFoundError } from '../shared/errors.js';
import { releaseStateEvent } from './event-messages.js';
import { isTerminalRelease, PUBLISH_REQUESTED_AT, type ReleaseAggregate, type Task } from './model.js';
import {
  type EventPublisher,
  isChangeConflict,
  type ReleaseChanges,
  type ReleaseOrchestrator,
  type ReleaseReads,
} from './ports.js';

/**
 * Publish and cancel, as the HTTP API asks for them. The state change and its event are one transaction conditioned
 * on the state we saw, so concurrent requests settle by condition: two publishes, exactly one wins. The orchestrator
 * is then driven to do the work (send publish / cancel to the task services): its execution is woken, or started
 * when none is running.
 */
export interface LifecycleDeps {
  releases: ReleaseReads & ReleaseChanges;
  orchestrator: ReleaseOrchestrator;
  publisher: EventPublisher;
}

/** POST /releases/<id>/publish: staged -> publishing (admin only, checked by the route). */
export async function publishRelease(deps: LifecycleDeps, id: string): Promise<{ message: string }> {
  const agg = await deps.releases.load(id);
  if (!agg) throw new NotFoundError(`Release ${id} not found`);
  const { release } = agg;
  if (release.state !== 'staged')
    throw new ConflictError(`The release in state ${release.state} may not be published; it must be staged`);
  try {
    const written = await deps.releases.applyChange({
      releaseId: id,
      expectState: 'staged',
      toState: 'publishing',
      // When publishing was asked for: the publish -> published duration is measured from it (metrics).
      setExtras: { [PUBLISH_REQUESTED_AT]: Date.now() },
      events: [releaseStateEvent(release, 'staged', 'publishing')],
    });
    await deps.publisher.publish(written);
  } catch (err) {
    if (isChangeConflict(err))
      throw new ConflictError(`Release ${id} is no longer staged; it may not be published`, { cause: err });
    throw err;
  }
  await deps.orchestrator.drive(id);
  return { message: `release ${id} is publishing` };
}

/** A task as the 409 of an unconfirmed cancel names it. */
export interface PublicTask {
  task_id: string;
  task_service_id: string;
  service_name: string;
}

const publicTask = (t: Task): PublicTask => ({
  task_id: t.id,
  task_service_id: t.taskServiceId,
  service_name: t.serviceName,
});
const named = (t: Task) => `${t.id} (task service "${t.serviceName}", ${t.taskServiceId})`;

/**
 * The 409 of a cancel during publishing without `confirm_published=true`: publishing makes work public, and a cancel
 * sends every task `cancel`, which asks the services that published to discard it. The answer says what has
 * published (and what is publishing), in its message and in the fields `published` and `publishing`.
 */
export class PublishedConfirmationError extends AppError {
  override name = 'PublishedConfirmationError';
  constructor(agg: ReleaseAggregate) {
    const published = agg.tasks.filter((t) => t.state === 'published');
    const publishing = agg.tasks.filter((t) => t.state === 'publishing' || t.state === 'staged');
    const done = published.length
      ? `${published.length} of ${agg.tasks.length} task(s) have already published: ${published.map(named).join(', ')}`
      : 'no task has published yet';
    const going = publishing.length ? `; still publishing: ${publishing.map(named).join(', ')}` : '';
    super(
      409,
      'confirmation_required',
      `Release ${agg.release.id} is publishing: ${done}${going}. Canceling sends cancel to every task, asking the ` +
        'services that published to discard it, and the release ends canceled; to cancel anyway, repeat the ' +
        'request with confirm_published=true',
    );
    this.details = { published: published.map(publicTask), publishing: publishing.map(publicTask) };
  }
}

/**
 * DELETE /releases/<id>: any non-terminal state -> canceling, answering the release. A repeat while canceling
 * answers the release again; a terminal release is a 409. A release that is publishing is only canceled with
 * `confirmPublished` (the query flag confirm_published=true): otherwise a 409 that names what has published.
 */
export async function cancelRelease(
  deps: LifecycleDeps,
  id: string,
  options: { confirmPublished?: boolean } = {},
): Promise<ReleaseAggregate> {
  let lost: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const agg = await deps.releases.load(id);
    if (!agg) throw new NotFoundError(`Release ${id} not found`);
    const { release } = agg;
    if (isTerminalRelease(release.state))
      throw new ConflictError(`The release in state ${release.state} may not be canceled`);
    // The change below is conditioned on the state read here: a release that starts publishing meanwhile makes it
    // fail, and the next attempt asks for the confirmation.
    if (release.state === 'publishing' && !options.confirmPublished)
      throw new PublishedConfirmationError(agg);
    if (release.state === 'canceling') {
      await deps.orchestrator.drive(id);
      return agg;
    }
    try {
      const written = await deps.releases.applyChange({
        releaseId: id,
        expectState: release.state,
        toState: 'canceling',
        events: [releaseStateEvent(release, release.state, 'canceling')],
      });
      await deps.publisher.publish(written);
    } catch (err) {
      if (!isChangeConflict(err)) throw err;
      lost = err; // the state moved under us: look again
      continue;
    }
    await deps.orchestrator.drive(id);
    return { ...agg, release: { ...release, state: 'canceling' } };
  }
  throw new ConflictError(`Release ${id} is changing concurrently; retry`, { cause: lost });
}
