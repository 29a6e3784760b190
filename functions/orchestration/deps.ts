import { z } from 'zod';
import { documentClient } from '../adapters/aws.js';
import { tablesFromEnv } from '../adapters/dynamodb/common.js';
import { DynamoReleaseRepository } from '../adapters/dynamodb/releases.js';
import { DynamoTaskServiceRepository } from '../adapters/dynamodb/task-services.js';
import { eventPublisher } from '../adapters/event-publisher.js';
import { type SfnOrchestration, sfnOrchestration } from '../adapters/sfn-orchestrator.js';
import {
  type CallResult,
  createTaskServiceClient,
  type TaskServiceClient,
} from '../adapters/task-service-client.js';
import { tokenClient } from '../adapters/token-client.js';
import { systemClock } from '../shared/clock.js';
import { parseEnv } from '../shared/config.js';
import { type OrchestrationEnv, orchestrationSettings } from './config.js';
import type { CallOutcome, OrchestrationDeps, TaskServiceCalls } from './ports.js';

/** The task-service client's classified results, reduced to what the orchestration reads. */
export function taskServiceCalls(client: TaskServiceClient): TaskServiceCalls {
  const reduce = (out: CallResult<unknown>): CallOutcome =>
    out.ok
      ? { ok: true, body: out.body }
      : { ok: false, kind: out.failure.kind, reason: out.failure.message };
  return {
    action: async (url, body, timeoutMs) => reduce(await client.action(url, body, timeoutMs)),
    status: async (url, timeoutMs) => reduce(await client.status(url, timeoutMs)),
  };
}

const stateMachineEnv = z.object({ RELEASE_STATE_MACHINE_ARN: z.string().min(1) });

export interface OrchestrationRuntime {
  settings: OrchestrationEnv;
  deps: OrchestrationDeps;
  /** Step Functions side: executions, the wake latch, the ReleaseOrchestrator port. */
  sfn: SfnOrchestration;
}

let runtime: OrchestrationRuntime | undefined;

/** The orchestration's composition root, once per container (cold start). */
export function orchestrationRuntime(): OrchestrationRuntime {
  if (runtime) return runtime;
  const settings = orchestrationSettings();
  const doc = documentClient();
  const tables = tablesFromEnv();
  const releases = new DynamoReleaseRepository(doc, tables, systemClock);
  let sfn: SfnOrchestration | undefined;
  runtime = {
    settings,
    deps: {
      releases,
      services: new DynamoTaskServiceRepository(doc, tables, systemClock),
      calls: taskServiceCalls(createTaskServiceClient(tokenClient())),
      publisher: eventPublisher(),
      clock: systemClock,
      concurrency: settings.ACTION_CONCURRENCY,
    },
    // Only the state machine's own functions need it; the health check can run without (then it wakes nothing).
    get sfn() {
      sfn ??= sfnOrchestration(parseEnv(stateMachineEnv).RELEASE_STATE_MACHINE_ARN, { releases });
      return sfn;
    },
  };
  return runtime;
}
