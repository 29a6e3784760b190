/** The shapes the local Step Functions endpoint shares between its parts. */

export interface StepFunctionsOptions {
  /** 0 (default) = a random free port. */
  port?: number;
  host?: string;
  /** Defaults to statemachines/release.asl.json. */
  definitionPath?: string;
  stateMachineName?: string;
  region?: string;
  accountId?: string;
  /** Loads a worker handler module by its manifest entry; defaults to the LOCAL_HANDLERS switch (local/handlers.ts). */
  load?: (entry: string) => Promise<{ handler: WorkerHandler }>;
  /**
   * Milliseconds a callback state waits before States.Timeout, given the state name and the timeout the definition
   * asked for (seconds). Tests use it to poll faster than the 1 s minimum of TimeoutSecondsPath.
   */
  waitMs?: (stateName: string, timeoutSeconds: number) => number;
  /** Replaces every Retry interval (ms), e.g. 0 in tests. */
  retryIntervalMs?: number;
  /** How many closed executions are kept for DescribeExecution / GetExecutionHistory (oldest dropped first). */
  keepClosed?: number;
}

export type WorkerHandler = (event: any, context?: any) => Promise<unknown>;

export interface LocalStepFunctions {
  env: { AWS_ENDPOINT_URL_SFN: string; RELEASE_STATE_MACHINE_ARN: string };
  endpoint: string;
  stateMachineArn: string;
  /** StateEntered events of an execution (by name or ARN) so far: what AWS bills as state transitions. */
  transitions(nameOrArn: string): number;
  /** Resolves when no execution is running (or after `timeoutMs`, returning false). */
  idle(timeoutMs?: number): Promise<boolean>;
  stop(): Promise<void>;
}

/** The one state machine an endpoint runs: where it is and what it is called. */
export interface MachineIdentity {
  region: string;
  account: string;
  name: string;
  arn: string;
}

export type Status = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED';

export interface HistoryEvent {
  id: number;
  previousEventId: number;
  timestamp: number;
  type: string;
  [details: string]: unknown;
}

export interface Execution {
  arn: string;
  name: string;
  input: string;
  status: Status;
  startDate: number;
  stopDate?: number;
  output?: string;
  error?: string;
  cause?: string;
  history: HistoryEvent[];
  stateEntered: number;
  tokens: Set<string>;
  abort: () => void;
  done: Promise<void>;
}

/** An error the Step Functions API answers with a 400 and its `__type`. */
export class SfnError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** An error with the name Retry and Catch match on. */
export function named(name: string, message: string): Error {
  const err = new Error(message);
  err.name = name;
  return err;
}
