import type { OrchestrationState } from '../coordinator/ports.js';
import { log } from '../shared/log.js';
import { count, METRIC, seconds } from '../shared/metrics.js';
import { ensureDriven } from './executions.js';
import { phaseOf } from './phase-limit.js';
import type { Executions } from './ports.js';
import { type WakeLatch, wakeOwed } from './wake-latch.js';

/**
 * The reconciler, run on a schedule (an EventBridge rule every minute on AWS, a timer in the local stack, which
 * also runs it right after start-up). It reads the active-release index (the releases that are not terminal,
 * functions/adapters/dynamodb/common.ts) and, for each:
 *
 * - no execution of its generation is running (a StartExecution that failed after POST /releases, an execution
 *   that died of an infrastructure error, a local stack that was killed): it starts one (executions.ts), which
 *   carries on from the release's stored state;
 * - its execution runs but a wake was not delivered (the token is still stored), or it waits for publish while the
 *   release is no longer staged: it delivers the wake again.
 *
 * Every action is idempotent (named executions per generation, conditional claims, stale tokens are harmless), so
 * overlapping runs, or a run racing a hand-over, do no harm. Its cost is one index query plus one
 * DescribeExecution per active release.
 */
export interface ReconcileDeps {
  releases: OrchestrationState;
  executions: Executions;
  latch: Pick<WakeLatch, 'wake'>;
  /** How many releases are looked at at the same time. */
  concurrency: number;
}

export interface ReconcileReport {
  active: number;
  running: number;
  /** Releases that got an execution (with its generation). */
  started: { releaseId: string; generation: number }[];
  /** Releases whose owed wake was delivered again. */
  woken: string[];
  /** Releases that could not be looked at this time (the next run tries again). */
  failed: string[];
}

export async function reconcile(deps: ReconcileDeps): Promise<ReconcileReport> {
  const active = await deps.releases.listActive();
  const report: ReconcileReport = { active: active.length, running: 0, started: [], woken: [], failed: [] };
  const one = async ({ release, extras }: (typeof active)[number]) => {
    const driven = await ensureDriven(deps.releases, deps.executions, release.id, extras);
    if (driven.outcome === 'started')
      report.started.push({ releaseId: release.id, generation: driven.generation });
    if (driven.outcome !== 'running') return;
    report.running++;
    if (!wakeOwed(release.state, extras)) return;
    const { outcome } = await deps.latch.wake(release.id);
    if (outcome === 'failed') report.failed.push(release.id);
    else report.woken.push(release.id);
  };
  let next = 0;
  const worker = async () => {
    while (next < active.length) {
      const item = active[next++];
      await one(item).catch((err) => {
        report.failed.push(item.release.id);
        log.error('reconciler: release not reconciled', { releaseId: item.release.id, error: String(err) });
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(deps.concurrency, active.length) }, worker));
  if (report.started.length || report.woken.length || report.failed.length)
    log.warn('reconciler', { ...report });
  // What the alarms watch: work the reconciler had to redrive (a lost start or wake), and how long the oldest phase
  // at work has lasted since it began (a stuck phase ages past the ReleaseStuck threshold before MAX_PHASE_SECONDS
  // fails it); and for the dashboard, how long the oldest non-terminal release has been around.
  count(METRIC.reconcilerRedrives, {}, report.started.length + report.woken.length);
  count(METRIC.activeReleases, {}, active.length);
  const now = Date.now();
  const oldest = Math.min(...active.map(({ release }) => Date.parse(release.createdAt)));
  seconds(METRIC.oldestActiveReleaseAge, active.length ? (now - oldest) / 1000 : 0);
  const phaseStarts = active.flatMap((a) => phaseOf(a)?.startedAtMs ?? []);
  seconds(METRIC.oldestPhaseAge, phaseStarts.length ? (now - Math.min(...phaseStarts)) / 1000 : 0);
  return report;
}
