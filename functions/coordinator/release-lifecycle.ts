import { ConflictError, NotFoundError } from '../shared/errors.js';
import { releaseStateEvent } from './event-messages.js';
import { isTerminalRelease, PUBLISH_REQUESTED_AT, type ReleaseAggregate } from './model.js';
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

/**
 * DELETE /releases/<id>: any non-terminal state -> canceling, answering the release. A repeat while canceling
 * answers the release again; a terminal release is a 409.
 */
export async function cancelRelease(deps: LifecycleDeps, id: string): Promise<ReleaseAggregate> {
  let lost: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const agg = await deps.releases.load(id);
    if (!agg) throw new NotFoundError(`Release ${id} not found`);
    const { release } = agg;
    if (isTerminalRelease(release.state))
      throw new ConflictError(`The release in state ${release.state} may not be canceled`);
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
