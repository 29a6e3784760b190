import type { NewEvent, ReleaseAggregate, ReleaseState, Task } from '../coordinator/model.js';
import { type Reply, sendActions, serviceOf } from './actions.js';
import { commit, isConflict, releaseMove, TransientError, taskPart } from './changes.js';
import type { RunConfig } from './config.js';
import type { OrchestrationDeps } from './ports.js';

/**
 * canceling -> canceled (or failed), the spec's "the coordinator sends cancel to all task services; they stop the
 * task or discard operations":
 *
 * - `cancel` goes to EVERY task of the release, best effort: the failed one too (its service may still be working,
 *   and is told to stop), and those that already published (their services are told to discard the publication).
 * - Tasks still at work end `canceled`. `failed` stays `failed` (the culprit). `published` stays `published`: it is
 *   a final state (docs/api.md, States), and it records that the work was made public. Each published task gets an
 *   event naming it, its service and what the service answered to the discard; the release's end gets one that
 *   lists them all.
 * - The release ends `failed` when a task failed or the orchestration itself did, `canceled` otherwise. It keeps
 *   its provisional version, and its studies' last_pub_version is not touched: the release was never published.
 * - A cancel that could not be delivered is a `warning` event; a discard that could not be delivered to a task that
 *   published is an `error` event (its publication may remain).
 */
export async function cancelRelease(
  deps: OrchestrationDeps,
  releaseId: string,
  config: RunConfig,
): Promise<{ state: ReleaseState | 'missing'; agg: ReleaseAggregate | null }> {
  const first = await deps.releases.load(releaseId);
  if (first?.release.state !== 'canceling') return { state: first?.release.state ?? 'missing', agg: first };
  const replies = await sendActions(deps, first, first.tasks, 'cancel', config);
  const events = replies.flatMap((r) => eventsOf(releaseId, r));
  let lost: unknown;
  for (let attempt = 0; attempt < 6; attempt++) {
    const agg = attempt === 0 ? first : await deps.releases.load(releaseId);
    if (agg?.release.state !== 'canceling') return { state: agg?.release.state ?? 'missing', agg };
    const failed =
      agg.tasks.some((t) => t.state === 'failed') || typeof agg.extras.failureReason === 'string';
    const parts = agg.tasks.filter((t) => !KEPT.includes(t.state)).map((t) => taskPart(t, 'canceled'));
    const to: ReleaseState = failed ? 'failed' : 'canceled';
    const published = agg.tasks.filter((t) => t.state === 'published');
    const summary = published.length ? [partlyPublished(agg, to, published)] : [];
    try {
      await commit(deps, releaseId, parts, releaseMove(agg, to, { events: [...events, ...summary] }));
      return { state: to, agg: null };
    } catch (err) {
      if (!isConflict(err)) throw err;
      lost = err;
    }
  }
  throw new TransientError(`release ${releaseId} changed concurrently too often to finish canceling`, {
    cause: lost,
  });
}

/** Task states a canceled release leaves as they are: each is final, and says what the task did. */
const KEPT: readonly Task['state'][] = ['failed', 'canceled', 'published'];

function eventsOf(releaseId: string, r: Reply): NewEvent[] {
  const refs = { releaseId, taskId: r.task.id, taskServiceId: r.task.taskServiceId };
  if (r.task.state === 'published') {
    const message = r.ok
      ? `task ${r.task.id} had already published; cancel was sent to ${serviceOf(r.task)} to discard its ` +
        `publication, and it answered ${r.state}; the task stays published`
      : `task ${r.task.id} had already published; ${r.reason}, so its publication may remain; the task stays published`;
    return [{ eventType: r.ok ? 'warning' : 'error', message, ...refs }];
  }
  if (r.ok) return [];
  const after =
    r.task.state === 'failed' || r.task.state === 'canceled' ? `stays ${r.task.state}` : 'is canceled anyway';
  return [{ eventType: 'warning', message: `task ${r.task.id}: ${r.reason}; the task ${after}`, ...refs }];
}

/** The release-level event of a release that ends after some of its tasks published. */
function partlyPublished(agg: ReleaseAggregate, to: ReleaseState, published: Task[]): NewEvent {
  const list = published.map((t) => `${t.id} (${serviceOf(t)})`).join(', ');
  return {
    eventType: 'warning',
    message:
      `release ${agg.release.id} ends ${to} after ${published.length} of ${agg.tasks.length} task(s) had ` +
      `published: ${list}; cancel was sent to each to discard its publication`,
    releaseId: agg.release.id,
  };
}
