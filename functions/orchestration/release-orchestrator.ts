import type { OrchestrationState, ReleaseOrchestrator } from '../coordinator/ports.js';
import { log, logKeys } from '../shared/log.js';
import { CORRELATION_ID } from './correlation.js';
import { ensureDriven } from './executions.js';
import type { Executions, TaskTokens } from './ports.js';
import { WakeLatch } from './wake-latch.js';

/**
 * The ReleaseOrchestrator port, for the coordinator's use cases: start a new release's execution, wake its poll loop
 * through the latch (wake-latch.ts), and drive it (publish, cancel). Built on the orchestration's own ports
 * (Executions, TaskTokens), so the Step Functions adapter (functions/adapters/sfn-orchestrator.ts) only carries the
 * SDK calls and no orchestration logic.
 */
export class LatchedReleaseOrchestrator implements ReleaseOrchestrator {
  constructor(
    private readonly executions: Executions,
    private readonly latch: WakeLatch,
    private readonly releases: OrchestrationState,
  ) {}

  /**
   * A new release is generation 0. Its correlation id (the creating request's) is stored first, so every later
   * execution, and every action sent for it, carries the same one (correlation.ts).
   */
  async start(releaseId: string): Promise<void> {
    const correlationId = logKeys().correlation_id;
    if (correlationId)
      await this.releases
        .exchangeExtras(releaseId, { set: { [CORRELATION_ID]: correlationId } })
        // Not worth failing the start for: the execution carries the id and its first step stores it.
        .catch((err) => log.warn('correlation id not stored', { releaseId, error: String(err) }));
    await this.executions.start(releaseId, 0, correlationId);
  }

  async wake(releaseId: string): Promise<void> {
    await this.latch.wake(releaseId);
  }

  /**
   * Wake the release's execution, and if none drives it any more (it died of an infrastructure error, it never
   * started, or the process that ran it locally was restarted), start one, so the published or canceling release
   * reaches its end without waiting for the reconciler. Failures are left to the reconciler.
   */
  async drive(releaseId: string): Promise<void> {
    try {
      const { outcome, extras } = await this.latch.wake(releaseId);
      if (outcome === 'delivered' || extras === null) return;
      const driven = await ensureDriven(this.releases, this.executions, releaseId, extras);
      if (driven.outcome === 'started')
        log.warn('release had no running execution; started one', { releaseId, ...driven });
    } catch (err) {
      log.error('could not drive the release now; the reconciler will', { releaseId, error: String(err) });
    }
  }
}

/** Without a state machine (RELEASE_STATE_MACHINE_ARN unset) nothing drives releases: new ones stay initializing. */
export const noopOrchestrator: ReleaseOrchestrator = {
  async start(releaseId) {
    log.warn('no release orchestrator configured (RELEASE_STATE_MACHINE_ARN unset); release not driven', {
      releaseId,
    });
  },
  async wake() {},
  async drive() {},
};

/**
 * The orchestrator a handler hands its use cases: on the given executions and task tokens (the Step Functions
 * adapter), or the no-op when there are none. `releases` is the handler's own store, so the latch shares its client.
 */
export function releaseOrchestrator(
  releases: OrchestrationState,
  machine: { executions: Executions; tokens: TaskTokens } | null,
): ReleaseOrchestrator {
  if (!machine) return noopOrchestrator;
  return new LatchedReleaseOrchestrator(
    machine.executions,
    new WakeLatch(releases, machine.tokens),
    releases,
  );
}
