import type { Context } from 'aws-lambda';
import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { sfnMachine, stateMachineArnFromEnv } from '#functions/adapters/sfn-orchestrator.js';
import { inInvocation } from '#functions/shared/log.js';
import { type ReconcileReport, reconcile } from '../reconcile.js';
import { WakeLatch } from '../wake-latch.js';

/**
 * The scheduled reconciler (EventBridge rule every `reconcileMinutes` on AWS; locally a timer every
 * RECONCILE_SECONDS and once at start-up): every release that is not terminal gets an execution if none runs, and
 * a wake that was not delivered is delivered again. It wires only what it uses.
 */
const releases = new DynamoReleaseRepository(documentClient(), tablesFromEnv());
const { executions, tokens } = sfnMachine(stateMachineArnFromEnv());
const latch = new WakeLatch(releases, tokens);

export function handler(_event?: unknown, context?: Context): Promise<ReconcileReport> {
  return inInvocation(context, {}, () => reconcile({ releases, executions, latch, concurrency: 8 }));
}
