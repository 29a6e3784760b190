import type { Context } from 'aws-lambda';
import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoEventRepository } from '#functions/adapters/dynamodb/events.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { sfnMachine, stateMachineArnFromEnv } from '#functions/adapters/sfn-orchestrator.js';
import { expireEvents } from '#functions/coordinator/event-retention.js';
import { parseEnv } from '#functions/shared/config.js';
import { inInvocation, log } from '#functions/shared/log.js';
import * as z from '#functions/shared/zod.js';
import { type ReconcileReport, reconcile } from '../reconcile.js';
import { WakeLatch } from '../wake-latch.js';

/**
 * The scheduled reconciler (EventBridge rule every `reconcileMinutes` on AWS; locally a timer every
 * RECONCILE_SECONDS and once at start-up): every release that is not terminal gets an execution if none runs, and
 * a wake that was not delivered is delivered again. With EVENT_RETENTION_DAYS set, each run also deletes a page of
 * the events past it (functions/coordinator/event-retention.ts). It wires only what it uses.
 */
const { EVENT_RETENTION_DAYS } = parseEnv(
  z.object({
    /** Days events are kept; 0 (the default): for ever. */
    EVENT_RETENTION_DAYS: z._default(z.coerce.number().check(z.int(), z.minimum(0)), 0),
  }),
);
const doc = documentClient();
const tables = tablesFromEnv();
const releases = new DynamoReleaseRepository(doc, tables);
const events = new DynamoEventRepository(doc, tables);
const { executions, tokens } = sfnMachine(stateMachineArnFromEnv());
const latch = new WakeLatch(releases, tokens);

export function handler(_event?: unknown, context?: Context): Promise<ReconcileReport> {
  return inInvocation(context, {}, async () => {
    const report = await reconcile({ releases, executions, latch, concurrency: 8 });
    // After the releases: a slow expiry never holds up a redrive. Its failure is the next run's to retry.
    await expireEvents({ events }, EVENT_RETENTION_DAYS).catch((err) =>
      log.error('events past their retention could not be deleted', { error: String(err) }),
    );
    return report;
  });
}
