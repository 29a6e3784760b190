import type { TaskState } from '#packages/task-service/src/protocol.js';
import { PUBLISH_REQUESTED_AT, type ReleaseAggregate } from '../coordinator/model.js';
import { isoMicros } from '../shared/clock.js';
import { serviceOf } from './actions.js';
import type { TaskFailure } from './changes.js';

/**
 * MAX_PHASE_SECONDS: a phase in which task services work may not last for ever. Two phases have work in progress:
 *
 * - staging (release `initializing` or `running`), from the release's creation, while tasks are `pending` or
 *   `running`;
 * - publishing (release `publishing`), from the publish request, while tasks are `staged` or `publishing`.
 *
 * Past the limit, every task still at work fails (the reason names it, its service, the phase and the limit), and
 * the release fails as on any task failure. `staged` waits for an admin and `canceling` is bounded by the action
 * timeout: neither has a limit.
 */
export interface Phase {
  name: 'staging' | 'publishing';
  startedAtMs: number;
  /** Task states that are still at work in this phase. */
  working: readonly TaskState[];
}

/**
 * The phase a release is in and when it began, from the release record and its orchestration attributes alone (what
 * the active-release index gives the reconciler, which reports the oldest phase's age for the ReleaseStuck alarm).
 */
export function phaseOf(agg: Pick<ReleaseAggregate, 'release' | 'extras'>): Phase | null {
  const created = Date.parse(agg.release.createdAt);
  switch (agg.release.state) {
    case 'initializing':
    case 'running':
      return { name: 'staging', startedAtMs: created, working: ['pending', 'running'] };
    case 'publishing': {
      const asked = agg.extras[PUBLISH_REQUESTED_AT];
      const startedAtMs = typeof asked === 'number' ? asked : created;
      return { name: 'publishing', startedAtMs, working: ['staged', 'publishing'] };
    }
    default:
      return null;
  }
}

/** The tasks still at work once their phase has lasted longer than `maxPhaseSeconds`; none while in time. */
export function overdueTasks(agg: ReleaseAggregate, nowMs: number, maxPhaseSeconds: number): TaskFailure[] {
  const phase = phaseOf(agg);
  if (!phase || nowMs - phase.startedAtMs <= maxPhaseSeconds * 1000) return [];
  return agg.tasks
    .filter((t) => phase.working.includes(t.state))
    .map((t) => ({
      taskId: t.id,
      onlyFrom: [t.state],
      reason:
        `${serviceOf(t)} had not finished: the task was still ${t.state} when the ${phase.name} phase passed ` +
        `its limit of ${maxPhaseSeconds} s (MAX_PHASE_SECONDS; it began at ${isoMicros(phase.startedAtMs)})`,
    }));
}
