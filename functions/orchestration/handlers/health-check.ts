import type { Context } from 'aws-lambda';
import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { DynamoTaskServiceRepository } from '#functions/adapters/dynamodb/task-services.js';
import { eventPublisher } from '#functions/adapters/event-publisher.js';
import { sfnMachineFromEnv } from '#functions/adapters/sfn-orchestrator.js';
import { createTaskServiceClient, taskServiceCalls } from '#functions/adapters/task-service-client.js';
import { tokenClient } from '#functions/adapters/token-client.js';
import { systemClock } from '#functions/shared/clock.js';
import { inInvocation } from '#functions/shared/log.js';
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
