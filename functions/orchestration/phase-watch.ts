import type { ReleaseOrchestrator } from '../coordinator/ports.js';
import { log } from '../shared/log.js';
import type { GroupCompleted, PhaseReads } from './ports.js';

export interface PhaseWatchDeps {
  releases: PhaseReads;
  orchestrator: Pick<ReleaseOrchestrator, 'wake'>;
}

/**
 * PhaseWatch, on the coordinator table's stream: the view shard writes of a batch that completed their group (every
 * task of the group in `staged` or `published`, shard-stream.ts) are checked against the whole view, and a release
 * whose every task is there has its poll loop woken, so it moves on at once instead of at its next poll.
 *
 * Why here and not in the callback: a report cannot tell from its own transaction that it completed the phase, so
 * it had to send its write twice (once guarded) and read the view after it. Read off the stream, the check costs
 * the callback nothing, and it comes after the write is committed, so of two groups completing together the later
 * record sees both (no lost wake). Only a completed group costs a read: about one record in six at 50 tasks.
 *
 * A wake that fails is retried with the whole batch (Lambda's stream retries; locally the poller's), which is safe:
 * waking a release twice only sets its latch again (wake-latch.ts). Polling stays the safety net either way.
 */
export async function watchPhases(
  deps: PhaseWatchDeps,
  completed: readonly GroupCompleted[],
): Promise<{ woken: string[] }> {
  const unique = new Map(completed.map((c) => [`${c.releaseId} ${c.state}`, c]));
  const woken: string[] = [];
  const failures: unknown[] = [];
  await Promise.all(
    [...unique.values()].map(async ({ releaseId, state }) => {
      try {
        if (!(await deps.releases.allTasksIn(releaseId, state))) return;
        await deps.orchestrator.wake(releaseId);
        woken.push(releaseId);
      } catch (err) {
        log.error('phase completion not delivered; the batch is retried', {
          releaseId,
          state,
          error: err instanceof Error ? err.message : String(err),
        });
        failures.push(err);
      }
    }),
  );
  if (failures.length)
    throw new AggregateError(failures, `${failures.length} of ${unique.size} phase checks failed`);
  return { woken: woken.sort() };
}
