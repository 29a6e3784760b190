import {
  DescribeExecutionCommand,
  SendTaskSuccessCommand,
  type SFNClient,
  StartExecutionCommand,
} from '@aws-sdk/client-sfn';
import {
  type ExecutionInput,
  orchestrationSettings,
  type RunConfig,
  runConfigFrom,
} from '../orchestration/config.js';
import type { ExecutionStatus, Executions, TaskTokens } from '../orchestration/ports.js';
import { parseEnv } from '../shared/config.js';
import { logKeys } from '../shared/log.js';
import * as z from '../shared/zod.js';
import { sfnClient } from './aws.js';

/**
 * Step Functions behind the orchestration ports. The same code runs against AWS and the local endpoint
 * (local/step-functions/), chosen only by the SDK's AWS_ENDPOINT_URL_SFN.
 */

/** Errors that mean "this token does not wait any more": answered, timed out, or its execution is gone. */
const STALE_TOKEN = new Set(['TaskTimedOut', 'TaskDoesNotExist', 'InvalidToken']);

export class SfnTaskTokens implements TaskTokens {
  constructor(private readonly sfn: SFNClient) {}

  async succeed(token: string, output: Record<string, unknown> = {}): Promise<'delivered' | 'stale'> {
    try {
      await this.sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: JSON.stringify(output) }));
      return 'delivered';
    } catch (err) {
      if (STALE_TOKEN.has((err as Error).name)) return 'stale';
      throw err;
    }
  }
}

/** The execution name of a release's generation (functions/orchestration/executions.ts). */
export const executionName = (releaseId: string, generation: number) => `${releaseId}-g${generation}`;

/**
 * Executions of the release state machine, one name per release and generation. StartExecution with a name that was
 * used is a no-op for us either way: AWS answers a running execution with the same input as a success and anything
 * else with ExecutionAlreadyExists (a name stays taken for 90 days after its execution closed).
 */
export class SfnExecutions implements Executions {
  constructor(
    private readonly sfn: SFNClient,
    private readonly stateMachineArn: string,
    private readonly config: RunConfig,
  ) {}

  executionArn(releaseId: string, generation: number): string {
    return `${this.stateMachineArn.replace(':stateMachine:', ':execution:')}:${executionName(releaseId, generation)}`;
  }

  async start(releaseId: string, generation: number, given?: string): Promise<'started' | 'exists'> {
    // The release's correlation id when the caller knows it, else the starting request's (or step's), so the
    // execution's steps log and forward the same one.
    const correlationId = given ?? logKeys().correlation_id;
    const input: ExecutionInput = {
      releaseId,
      generation,
      config: correlationId ? { ...this.config, correlationId } : this.config,
    };
    try {
      await this.sfn.send(
        new StartExecutionCommand({
          stateMachineArn: this.stateMachineArn,
          name: executionName(releaseId, generation),
          input: JSON.stringify(input),
        }),
      );
      return 'started';
    } catch (err) {
      if ((err as Error).name === 'ExecutionAlreadyExists') return 'exists';
      throw err;
    }
  }

  async status(releaseId: string, generation: number): Promise<ExecutionStatus> {
    try {
      const out = await this.sfn.send(
        new DescribeExecutionCommand({ executionArn: this.executionArn(releaseId, generation) }),
      );
      // PENDING_REDRIVE: an operator redrove it (Step Functions' own redrive), so it is about to run again.
      return out.status === 'RUNNING' || out.status === 'PENDING_REDRIVE' ? 'running' : 'ended';
    } catch (err) {
      if ((err as Error).name === 'ExecutionDoesNotExist') return 'missing';
      throw err;
    }
  }
}

/** The Step Functions side of one state machine: its executions and the task tokens its callback states wait on. */
export interface SfnMachine {
  executions: SfnExecutions;
  tokens: SfnTaskTokens;
}

/**
 * The adapters for the state machine `stateMachineArn`, on one SFN client (one per container, aws.ts). The
 * orchestration's use cases build on them: the wake latch, the reconciler, and the ReleaseOrchestrator the API hands
 * its use cases (functions/orchestration/release-orchestrator.ts).
 */
export function sfnMachine(
  stateMachineArn: string,
  deps: { sfn?: SFNClient; config?: RunConfig } = {},
): SfnMachine {
  const sfn = deps.sfn ?? sfnClient();
  return {
    executions: new SfnExecutions(
      sfn,
      stateMachineArn,
      deps.config ?? runConfigFrom(orchestrationSettings()),
    ),
    tokens: new SfnTaskTokens(sfn),
  };
}

const machineEnv = z.object({ RELEASE_STATE_MACHINE_ARN: z.optional(z.string().check(z.minLength(1))) });

/**
 * The state machine from the env, by configuration, never by "am I local": with RELEASE_STATE_MACHINE_ARN its
 * adapters (on AWS, and locally on the SFN-compatible endpoint named by AWS_ENDPOINT_URL_SFN); without it null, and
 * nothing drives releases (the API functions work without one: new releases stay in `initializing`).
 */
export function sfnMachineFromEnv(env: NodeJS.ProcessEnv = process.env): SfnMachine | null {
  const { RELEASE_STATE_MACHINE_ARN } = parseEnv(machineEnv, env);
  return RELEASE_STATE_MACHINE_ARN ? sfnMachine(RELEASE_STATE_MACHINE_ARN) : null;
}

/** RELEASE_STATE_MACHINE_ARN for the functions that cannot work without it (the state machine's own tasks). */
export function stateMachineArnFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return parseEnv(z.object({ RELEASE_STATE_MACHINE_ARN: z.string().check(z.minLength(1)) }), env)
    .RELEASE_STATE_MACHINE_ARN;
}
