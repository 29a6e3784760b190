import { documentClient } from '../adapters/aws.js';
import { tablesFromEnv } from '../adapters/dynamodb/common.js';
import { DynamoReleaseRepository } from '../adapters/dynamodb/releases.js';
import { stateMachineArnFromEnv } from '../adapters/orchestrator.js';
import { sfnOrchestration } from '../adapters/sfn-orchestrator.js';
import { resumeReleases } from './resume.js';

/**
 * Entry points of the orchestration for the local stack and operators; like a handler, this file wires its own
 * adapters. Needs the same env as the handlers (tables, RELEASE_STATE_MACHINE_ARN, AWS_ENDPOINT_URL_SFN locally).
 */

/** Every non-terminal release gets an execution again unless one is running (local start-up; operator redrive). */
export function resumeInFlightReleases(only?: readonly string[]) {
  const releases = new DynamoReleaseRepository(documentClient(), tablesFromEnv());
  const { executions } = sfnOrchestration(stateMachineArnFromEnv(), { releases });
  return resumeReleases(releases, executions, only);
}

export { runHealthChecks } from './health-check.js';
