import type { Context, DynamoDBStreamEvent } from 'aws-lambda';
import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { groupsCompleted } from '#functions/adapters/dynamodb/releases/shard-stream.js';
import { sfnMachineFromEnv } from '#functions/adapters/sfn-orchestrator.js';
import { PHASE_ENDS } from '#functions/coordinator/model.js';
import { inInvocation } from '#functions/shared/log.js';
import { watchPhases } from '../phase-watch.js';
import { releaseOrchestrator } from '../release-orchestrator.js';

/**
 * Invoked with batches of the coordinator table's stream records, filtered to the task view's shards (a Lambda
 * event source mapping on AWS, local/dynamodb-streams.ts locally): wakes the poll loop of every release whose tasks
 * have all reached the end of their phase (functions/orchestration/phase-watch.ts). A batch that fails is retried.
 */
const releases = new DynamoReleaseRepository(documentClient(), tablesFromEnv());
const deps = { releases, orchestrator: releaseOrchestrator(releases, sfnMachineFromEnv()) };

export function handler(event: DynamoDBStreamEvent, context?: Context): Promise<{ woken: string[] }> {
  return inInvocation(context, {}, () => watchPhases(deps, groupsCompleted(event.Records ?? [], PHASE_ENDS)));
}
