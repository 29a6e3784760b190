import type { TaskState } from '#packages/task-service/src/protocol.js';
import type { CoordinatorEvent } from '../coordinator/model.js';
import type {
  OrchestrationState,
  PublishedVersions,
  ReleaseChanges,
  ReleaseReads,
  TaskReads,
  TaskServiceRepository,
} from '../coordinator/ports.js';
import type { Clock } from '../shared/clock.js';

/**
 * The ports the orchestration use cases depend on, beyond the coordinator's repositories. No AWS types: the
 * adapters are functions/adapters/sfn-orchestrator.ts (Step Functions), task-service-client.ts (HTTP) and
 * event-publisher.ts (SNS / EventBridge).
 */

/** Answers a waiting callback state (SendTaskSuccess). */
export interface TaskTokens {
  /** 'stale' when the token no longer waits (answered, timed out, execution gone): not an error. */
  succeed(token: string, output?: Record<string, unknown>): Promise<'delivered' | 'stale'>;
}

/** running; ended (succeeded, failed, aborted, timed out); missing (never started, or long forgotten). */
/** A view shard's group whose tasks all reached `state` with one write, as the table's stream showed it. */
export interface GroupCompleted {
  releaseId: string;
  state: TaskState;
}

/** What PhaseWatch reads: whether every task of a release is in a state (its view, read consistently). */
export interface PhaseReads {
  allTasksIn(releaseId: string, state: TaskState): Promise<boolean>;
}

export type ExecutionStatus = 'running' | 'ended' | 'missing';

/**
 * The executions that drive a release. Generation N of a release has one fixed name (`<releaseId>-g<N>`), so a
 * start that is retried, or made by two callers at once, never runs two executions.
 */
export interface Executions {
  /**
   * Starts the release's execution of this generation; 'exists' when that name was already used. The execution
   * carries `correlationId` (the release's, correlation.ts), or the caller's own when none is given.
   */
  start(releaseId: string, generation: number, correlationId?: string): Promise<'started' | 'exists'>;
  status(releaseId: string, generation: number): Promise<ExecutionStatus>;
}

export interface EventSink {
  publish(events: readonly CoordinatorEvent[]): Promise<void>;
}

/** Outcome of one HTTP call to a task service (the task-service client's result, reduced to what we read). */
export type CallOutcome =
  | { ok: true; body: unknown }
  | {
      ok: false;
      reason: string;
      kind: 'unreachable' | 'timeout' | 'status' | 'not_json' | 'bad_body' | 'refused';
      /** The HTTP status of an answer other than 200 (kind `status`). */
      status?: number;
      /** Its Retry-After header, as sent: a 503 with one is retried (action-retry.ts). */
      retryAfter?: string;
    };

export interface TaskServiceCalls {
  action(
    url: string,
    body: {
      action: 'initialize' | 'start' | 'get_status' | 'publish' | 'cancel';
      task_id: string;
      release_id: string;
      studies: string[];
    },
    timeoutMs: number,
    /** The service's signing secrets: the action is signed for it with each (Standard Webhooks). */
    secrets?: readonly string[],
  ): Promise<CallOutcome>;
  status(url: string, timeoutMs: number): Promise<CallOutcome>;
}

/** What the release steps (release-steps.ts) work with. */
export interface OrchestrationDeps {
  releases: ReleaseReads & ReleaseChanges & OrchestrationState & PublishedVersions;
  services: Pick<
    TaskServiceRepository,
    'all' | 'get' | 'updateHealth' | 'recordFailedCheck' | 'credentialsOf'
  >;
  calls: TaskServiceCalls;
  /** Where stored events are fanned out (SNS / EventBridge / nowhere). */
  publisher: EventSink;
  clock: Clock;
  /** How many task services one step calls at once. */
  concurrency: number;
  /** Waits between retries of an action (a timer; tests pass one that moves their fake clock). */
  sleep?: (ms: number) => Promise<void>;
}

/** What the health check (health-check.ts) works with: the steps' services, with the tasks instead of the latch. */
export type HealthCheckDeps = Omit<OrchestrationDeps, 'releases'> & {
  releases: ReleaseReads & ReleaseChanges & TaskReads;
};
