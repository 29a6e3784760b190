import { AppError, ConflictError, NotFoundError } from '../shared/errors.js';
import { releaseStateEvent } from './event-messages.js';
import {
  isTerminalRelease,
  PUBLISH_REQUESTED_AT,
  PUBLISH_RETRIES_ASKED,
  publishRetriesAsked,
  type ReleaseAggregate,
  type Task,
} from './model.js';
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

/** The answer of a publish retry: what was asked, and the tasks that get `publish` again. */
export interface PublishRetry {
  message: string;
  tasks: PublicTask[];
}

/**
 * POST /releases/<id>/publish `{"retry": true}`: a release stuck in `publishing` (a task service lost or never
 * finished its publish, and has been fixed) gets `publish` sent again to each task that has not published, and to no
 * other. The request is recorded on the release with an event naming the tasks (one conditional write, still
 * `publishing`), and the execution is woken: its Publish step sends them (functions/orchestration/release-steps.ts).
 * Any other state is a 409; a canceled or failed release that had partly published says why it is not re-published
 * (docs/operations.md, A partly published release).
 */
export async function retryPublish(
  deps: LifecycleDeps,
  id: string,
  actor: string | null,
): Promise<PublishRetry> {
  const agg = await deps.releases.load(id);
  if (!agg) throw new NotFoundError(`Release ${id} not found`);
  const { release, tasks } = agg;
  if (release.state !== 'publishing') {
    const published = tasks.filter((t) => t.state === 'published');
    if (isTerminalRelease(release.state) && release.state !== 'published' && published.length)
      throw new ConflictError(
        `Release ${id} is ${release.state} after ${published.length} of ${tasks.length} task(s) had published; it ` +
          'is not published again: canceling it sent cancel to every task service, the ones that had published ' +
          'included, and a task service refuses publish for a task it canceled. Create a new release of the same ' +
          'studies (docs/operations.md, A partly published release)',
      );
    throw new ConflictError(
      `The release in state ${release.state} has no publish to retry; only a publishing release does`,
    );
  }
  const unpublished = tasks.filter((t) => t.state !== 'published');
  if (unpublished.length === 0)
    return { message: `release ${id}: every task has published; the release is being published`, tasks: [] };
  const asked = publishRetriesAsked(agg.extras) + 1;
  try {
    const written = await deps.releases.applyChange({
      releaseId: id,
      expectState: 'publishing',
      setExtras: { [PUBLISH_RETRIES_ASKED]: asked },
      events: [
        {
          eventType: 'info',
          message:
            `release ${id}: publish sent again to ${unpublished.length} task(s) that had not published, at the ` +
            `request of ${actor ?? 'an admin'}: ${unpublished.map(named).join(', ')}`,
          releaseId: id,
        },
      ],
    });
    await deps.publisher.publish(written);
  } catch (err) {
    if (isChangeConflict(err))
      throw new ConflictError(`Release ${id} is no longer publishing; nothing to retry`, { cause: err });
    throw err;
  }
  await deps.orchestrator.drive(id);
  return {
    message: `release ${id}: publish is sent again to ${unpublished.length} task(s) that have not published`,
    tasks: unpublished.map(publicTask),
  };
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
