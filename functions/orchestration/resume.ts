import type { ReleaseState } from '../coordinator/model.js';
import type { ReleaseRepository } from '../coordinator/ports.js';
import { log } from '../shared/log.js';
import type { Executions } from './ports.js';
import { EXECUTION_NAME } from './wake-latch.js';

/** Releases that still need an execution to drive them. */
export const IN_FLIGHT: readonly ReleaseState[] = [
  'initializing',
  'running',
  'staged',
  'publishing',
  'canceling',
];

/**
 * Gives every in-flight release an execution again, unless the one that drives it is still running. Run at
 * start-up of the local stack (executions live inside its process) and by an operator to redrive a release whose
 * execution died of an infrastructure error (docs/orchestration.md). A new execution starts at the machine's first
 * state, which routes by the release's current state.
 */
export async function resumeReleases(
  releases: Pick<ReleaseRepository, 'listByStates' | 'load'>,
  executions: Pick<Executions, 'ensureRunning'>,
  only?: readonly string[],
): Promise<{ resumed: string[]; running: string[] }> {
  const wanted = only ? new Set(only) : null;
  const candidates = (await releases.listByStates(IN_FLIGHT)).filter((r) => !wanted || wanted.has(r.id));
  const out = { resumed: [] as string[], running: [] as string[] };
  for (const r of candidates) {
    const agg = await releases.load(r.id);
    if (!agg || !IN_FLIGHT.includes(agg.release.state)) continue;
    const current = agg.extras[EXECUTION_NAME];
    const { started } = await executions.ensureRunning(
      r.id,
      typeof current === 'string' ? current : undefined,
    );
    if (started) {
      out.resumed.push(r.id);
      log.info('release resumed', { releaseId: r.id, execution: started, state: agg.release.state });
    } else out.running.push(r.id);
  }
  return out;
}
