import type { Context } from 'aws-lambda';
import { documentClient } from '../../adapters/aws.js';
import { tablesFromEnv } from '../../adapters/dynamodb/common.js';
import { DynamoReleaseRepository } from '../../adapters/dynamodb/releases/index.js';
import { DynamoTaskServiceRepository } from '../../adapters/dynamodb/task-services.js';
import { eventPublisher } from '../../adapters/event-publisher.js';
import { sfnMachineFromEnv } from '../../adapters/sfn-orchestrator.js';
import { createTaskServiceClient, taskServiceCalls } from '../../adapters/task-service-client.js';
import { tokenClient } from '../../adapters/token-client.js';
import { systemClock } from '../../shared/clock.js';
import { inInvocation } from '../../shared/log.js';
import { orchestrationSettings } from '../config.js';
import { type HealthReport, runHealthChecks } from '../health-check.js';
import { releaseOrchestrator } from '../release-orchestrator.js';

/** The scheduled health check (EventBridge rule every HEALTH_INTERVAL on AWS, a timer locally). */
const settings = orchestrationSettings();
const doc = documentClient();
const tables = tablesFromEnv();
const releases = new DynamoReleaseRepository(doc, tables);
const deps = {
  releases,
  services: new DynamoTaskServiceRepository(doc, tables),
  calls: taskServiceCalls(createTaskServiceClient(tokenClient())),
  publisher: eventPublisher(),
  clock: systemClock,
  concurrency: settings.ACTION_CONCURRENCY,
};
// Without RELEASE_STATE_MACHINE_ARN the check still runs; it then drives nothing.
const orchestrator = releaseOrchestrator(releases, sfnMachineFromEnv());

export function handler(_event?: unknown, context?: Context): Promise<HealthReport> {
  return inInvocation(context, {}, () =>
    runHealthChecks(deps, orchestrator, {
      failures: settings.HEALTH_FAILURES,
      timeoutMs: Math.round(settings.HEALTH_TIMEOUT_SECONDS * 1000),
    }),
  );
}
