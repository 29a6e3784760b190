import { z } from 'zod';
import { documentClient } from '../adapters/aws.js';
import { tablesFromEnv } from '../adapters/dynamodb/common.js';
import { DynamoEventRepository } from '../adapters/dynamodb/events.js';
import { DynamoReleaseRepository } from '../adapters/dynamodb/releases.js';
import { DynamoStudyRepository } from '../adapters/dynamodb/studies.js';
import { DynamoTaskServiceRepository } from '../adapters/dynamodb/task-services.js';
import { eventPublisher } from '../adapters/event-publisher.js';
import { createReleaseOrchestrator } from '../adapters/orchestrator.js';
import { createTaskServiceClient, type TaskServiceClient } from '../adapters/task-service-client.js';
import { tokenClient } from '../adapters/token-client.js';
import { type Clock, systemClock } from '../shared/clock.js';
import { parseEnv } from '../shared/config.js';
import type {
  EventPublisher,
  EventRepository,
  ReleaseOrchestrator,
  ReleaseRepository,
  StudyRepository,
  TaskServiceRepository,
} from './ports.js';

/** Coordinator settings, parsed once per container. */
export const coordinatorEnv = z.object({
  /** How long POST/PATCH /task-services waits for GET {url}/status. */
  TASK_SERVICE_PROBE_TIMEOUT_MS: z.coerce.number().int().positive().default(5000),
});
export type CoordinatorConfig = z.infer<typeof coordinatorEnv>;

export interface CoordinatorDeps {
  config: CoordinatorConfig;
  clock: Clock;
  taskServices: TaskServiceRepository;
  releases: ReleaseRepository;
  events: EventRepository;
  studies: StudyRepository;
  orchestrator: ReleaseOrchestrator;
  publisher: EventPublisher;
  taskServiceClient: TaskServiceClient;
}

let deps: CoordinatorDeps | undefined;

/**
 * The composition root: adapters wired to ports, once per container (at cold start of the handler that asks).
 * Table names are checked when a repository first touches its table, since each function is granted only some.
 */
export function coordinatorDeps(): CoordinatorDeps {
  if (deps) return deps;
  const config = parseEnv(coordinatorEnv);
  const doc = documentClient();
  const tables = tablesFromEnv();
  const clock = systemClock;
  let orchestrator: ReleaseOrchestrator | undefined;
  let client: TaskServiceClient | undefined;
  deps = {
    config,
    clock,
    taskServices: new DynamoTaskServiceRepository(doc, tables, clock),
    releases: new DynamoReleaseRepository(doc, tables, clock),
    events: new DynamoEventRepository(doc, tables, clock),
    studies: new DynamoStudyRepository(doc, tables),
    // Built on first use: only the functions that drive releases or call task services need their settings.
    get orchestrator() {
      orchestrator ??= createReleaseOrchestrator();
      return orchestrator;
    },
    get publisher() {
      return eventPublisher();
    },
    get taskServiceClient() {
      client ??= createTaskServiceClient(tokenClient());
      return client;
    },
  };
  return deps;
}
