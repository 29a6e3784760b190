import { log } from '../../shared/log.js';
import { isTransient, TransientError } from '../changes.js';
import { orchestrationRuntime } from '../deps.js';
import { ReleaseSteps, type StepInput, type StepResult } from '../release-steps.js';

/**
 * The state machine's ReleaseStep task (statemachines/release.asl.json): one call does one step for ALL tasks of a
 * release and answers the next step. Infrastructure trouble is thrown as Orchestration.Transient, which the ASL
 * retries with backoff; anything else reaches the Catch that fails the release with an error event.
 */
const { deps, sfn } = orchestrationRuntime();
const steps = new ReleaseSteps(deps, sfn.latch, sfn.executions);

export async function handler(event: StepInput): Promise<StepResult> {
  try {
    return await steps.run(event);
  } catch (err) {
    if (isTransient(err) && !(err instanceof TransientError)) {
      log.warn('release step: transient error', {
        releaseId: event?.releaseId,
        step: event?.step,
        error: String(err),
      });
      throw new TransientError(err instanceof Error ? err.message : String(err), { cause: err });
    }
    log.error('release step failed', { releaseId: event?.releaseId, step: event?.step, error: String(err) });
    throw err;
  }
}
