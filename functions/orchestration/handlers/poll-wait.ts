import { z } from 'zod';
import { isTransient, TransientError } from '../changes.js';
import { orchestrationRuntime } from '../deps.js';

/**
 * Invoked by the callback states (PollWait, WaitForPublish; lambda:invoke.waitForTaskToken) with a fresh task
 * token: it arms the release's wake latch (functions/orchestration/wake-latch.ts) and returns. The state then waits
 * for SendTaskSuccess (a wake) or its timeout (the poll interval), whichever comes first. Infrastructure trouble is
 * thrown as Orchestration.Transient, which the ASL retries.
 */
const { sfn } = orchestrationRuntime();

const payload = z.looseObject({
  token: z.string().min(1),
  releaseId: z.string().min(1),
  /** Which wait: PollWait ('poll') or WaitForPublish ('staged'); the reconciler reads it. */
  wait: z.enum(['poll', 'staged']).default('poll'),
});

export async function handler(event: unknown): Promise<{ armed: string }> {
  const { token, releaseId, wait } = payload.parse(event);
  try {
    return { armed: await sfn.latch.arm(releaseId, token, wait) };
  } catch (err) {
    if (isTransient(err))
      throw new TransientError(err instanceof Error ? err.message : String(err), { cause: err });
    throw err;
  }
}
