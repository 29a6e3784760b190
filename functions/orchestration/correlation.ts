import type { OrchestrationState } from '../coordinator/ports.js';
import { log, logKeys, withLogContext } from '../shared/log.js';

/**
 * A release's correlation id: one id for all its work, whichever process, execution or generation does it, so one
 * search finds every line of it on both sides (docs/operations.md). It is the X-Request-Id of the request that
 * created the release (or one made up for it), kept on the release item as an orchestration extra:
 *
 * - stored when the release's first execution is started (release-orchestrator.ts), before that execution runs;
 * - handed to every later execution of the release in its input (executions.ts: the reconciler after a restart,
 *   publish and cancel that start a missing execution, continue-as-new), rather than the id of whoever starts it;
 * - and put on every action a step sends (X-Request-Id), whatever the execution carried. A release stored before
 *   the id was kept adopts the id of the first execution that sends one of its actions.
 */
export const CORRELATION_ID = 'correlationId';

/** The stored correlation id of a release, from its extras. */
export function correlationOf(extras: Record<string, unknown> | null | undefined): string | undefined {
  const id = extras?.[CORRELATION_ID];
  return typeof id === 'string' && id.length > 0 && id.length <= 128 ? id : undefined;
}

/**
 * Runs `fn` (the actions of a step) with the release's stored correlation id in the log context, which is what the
 * task-service client sends as X-Request-Id. Without a stored one, the current one is stored and used.
 */
export async function withReleaseCorrelation<T>(
  releases: Pick<OrchestrationState, 'exchangeExtras'>,
  releaseId: string,
  extras: Record<string, unknown>,
  fn: () => Promise<T>,
): Promise<T> {
  let id = correlationOf(extras);
  if (!id) {
    id = logKeys().correlation_id;
    if (id) {
      await releases.exchangeExtras(releaseId, { set: { [CORRELATION_ID]: id } });
      extras[CORRELATION_ID] = id;
      log.info('release adopts the correlation id of its execution', { releaseId, correlationId: id });
    }
  }
  return id ? withLogContext({ correlation_id: id }, fn) : fn();
}
