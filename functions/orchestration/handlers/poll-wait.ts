import type { Context } from 'aws-lambda';
import { documentClient, sfnClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { SfnTaskTokens } from '#functions/adapters/sfn-orchestrator.js';
import { hasCode } from '#functions/shared/errors.js';
import { inInvocation } from '#functions/shared/log.js';
import * as z from '#functions/shared/zod.js';
import { isTransient, TransientError } from '../changes.js';
import { WakeLatch, waitSequence } from '../wake-latch.js';

/**
 * Invoked by the callback states (PollWait, WaitForPublish; lambda:invoke.waitForTaskToken) with a fresh task
 * token: it arms the release's wake latch (functions/orchestration/wake-latch.ts) and returns. The state then waits
 * for SendTaskSuccess (a wake) or its timeout (the poll interval), whichever comes first. Infrastructure trouble is
 * thrown as Orchestration.Transient, which the ASL retries.
 */
const latch = new WakeLatch(
  new DynamoReleaseRepository(documentClient(), tablesFromEnv()),
  new SfnTaskTokens(sfnClient()),
);

const payload = z.looseObject({
  token: z.string().check(z.minLength(1)),
  releaseId: z.string().check(z.minLength(1)),
  /** Which wait: PollWait ('poll') or WaitForPublish ('staged'); the reconciler reads it. */
  wait: z._default(z.enum(['poll', 'staged']), 'poll'),
  /** The wait's order (wake-latch.ts, waitSequence); absent from executions of an older definition. */
  generation: z.optional(z.number().check(z.int(), z.nonnegative())),
  rounds: z.optional(z.number().check(z.int(), z.nonnegative())),
  startedAt: z.optional(z.string()),
});

export function handler(event: unknown, context?: Context): Promise<{ armed: string }> {
  const releaseId = (event as { releaseId?: unknown })?.releaseId;
  return inInvocation(context, { release_id: typeof releaseId === 'string' ? releaseId : undefined }, () =>
    arm(event),
  );
}

async function arm(event: unknown): Promise<{ armed: string }> {
  const { token, releaseId, wait, generation, rounds, startedAt } = payload.parse(event);
  const seq = rounds === undefined ? undefined : waitSequence(generation ?? 0, startedAt, rounds);
  try {
    return { armed: await latch.arm(releaseId, token, wait, seq) };
  } catch (err) {
    if (isTransient(err) && !hasCode(err, 'transient'))
      throw new TransientError(err instanceof Error ? err.message : String(err), { cause: err });
    throw err;
  }
}
