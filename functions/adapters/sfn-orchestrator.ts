import {
  DescribeExecutionCommand,
  SendTaskSuccessCommand,
  type SFNClient,
  StartExecutionCommand,
} from '@aws-sdk/client-sfn';
import type { ReleaseOrchestrator, ReleaseRepository } from '../coordinator/ports.js';
import {
  type ExecutionInput,
  orchestrationSettings,
  type RunConfig,
  runConfigFrom,
} from '../orchestration/config.js';
import { ensureDriven } from '../orchestration/executions.js';
import type { ExecutionStatus, Executions, TaskTokens } from '../orchestration/ports.js';
import { WakeLatch } from '../orchestration/wake-latch.js';
import { log, logKeys } from '../shared/log.js';
import { documentClient, sfnClient } from './aws.js';
import { tablesFromEnv } from './dynamodb/common.js';
import { DynamoReleaseRepository } from './dynamodb/releases.js';

/**
 * Step Functions behind the orchestration ports. The same code runs against AWS and the local endpoint
 * (local/step-functions.ts), chosen only by the SDK's AWS_ENDPOINT_URL_SFN.
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

  async start(releaseId: string, generation: number): Promise<'started' | 'exists'> {
    // The starting request's (or step's) correlation id, so the execution's steps log and forward the same one.
    const correlationId = logKeys().correlation_id;
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

/** The ReleaseOrchestrator port on Step Functions: start, and wake/drive through the latch (wake-latch.ts). */
export class SfnReleaseOrchestrator implements ReleaseOrchestrator {
  constructor(
    private readonly executions: Executions,
    private readonly latch: WakeLatch,
    private readonly releases: Pick<ReleaseRepository, 'raiseExtra'>,
  ) {}

  /** A new release is generation 0. */
  async start(releaseId: string): Promise<void> {
    await this.executions.start(releaseId, 0);
  }

  async wake(releaseId: string): Promise<void> {
    await this.latch.wake(releaseId);
  }

  /**
   * Wake the release's execution, and if none drives it any more (it died of an infrastructure error, it never
   * started, or the process that ran it locally was restarted), start one, so the published or canceling release
   * reaches its end without waiting for the reconciler. Failures are left to the reconciler.
   */
  async drive(releaseId: string): Promise<void> {
    try {
      const { outcome, extras } = await this.latch.wake(releaseId);
      if (outcome === 'delivered' || extras === null) return;
      const driven = await ensureDriven(this.releases, this.executions, releaseId, extras);
      if (driven.outcome === 'started')
        log.warn('release had no running execution; started one', { releaseId, ...driven });
    } catch (err) {
      log.error('could not drive the release now; the reconciler will', { releaseId, error: String(err) });
    }
  }
}

export interface SfnOrchestration {
  orchestrator: SfnReleaseOrchestrator;
  executions: SfnExecutions;
  latch: WakeLatch;
}

/** Wiring from the env: RELEASE_STATE_MACHINE_ARN, the table names and the orchestration settings. */
export function sfnOrchestration(
  stateMachineArn: string,
  deps: { sfn?: SFNClient; releases?: ReleaseRepository; config?: RunConfig } = {},
): SfnOrchestration {
  const sfn = deps.sfn ?? sfnClient();
  const releases = deps.releases ?? new DynamoReleaseRepository(documentClient(), tablesFromEnv());
  const executions = new SfnExecutions(
    sfn,
    stateMachineArn,
    deps.config ?? runConfigFrom(orchestrationSettings()),
  );
  const latch = new WakeLatch(releases, new SfnTaskTokens(sfn));
  return { orchestrator: new SfnReleaseOrchestrator(executions, latch, releases), executions, latch };
}
