import { randomBytes } from 'node:crypto';
import {
  DescribeExecutionCommand,
  SendTaskSuccessCommand,
  type SFNClient,
  StartExecutionCommand,
} from '@aws-sdk/client-sfn';
import type { ReleaseOrchestrator, ReleaseRepository } from '../coordinator/ports.js';
import { orchestrationSettings, type RunConfig, runConfigFrom } from '../orchestration/config.js';
import type { Executions, TaskTokens } from '../orchestration/ports.js';
import { EXECUTION_NAME, WakeLatch } from '../orchestration/wake-latch.js';
import { log } from '../shared/log.js';
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

/**
 * Executions are named after the release id, so a repeated start is a no-op (ExecutionAlreadyExists). AWS keeps a
 * name for 90 days after its execution closed, so a redrive or a continue-as-new takes the release id plus a suffix.
 */
export class SfnExecutions implements Executions {
  constructor(
    private readonly sfn: SFNClient,
    private readonly stateMachineArn: string,
    private readonly config: RunConfig,
  ) {}

  executionArn(name: string): string {
    return `${this.stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
  }

  private async startNamed(releaseId: string, name: string): Promise<'started' | 'exists'> {
    try {
      await this.sfn.send(
        new StartExecutionCommand({
          stateMachineArn: this.stateMachineArn,
          name,
          input: JSON.stringify({ releaseId, config: this.config }),
        }),
      );
      return 'started';
    } catch (err) {
      if ((err as Error).name === 'ExecutionAlreadyExists') return 'exists';
      throw err;
    }
  }

  async start(releaseId: string): Promise<string> {
    await this.startNamed(releaseId, releaseId);
    return releaseId;
  }

  async startFresh(releaseId: string): Promise<string> {
    for (;;) {
      // Time first, so names sort by when they were started; 80 characters at most.
      const name = `${releaseId}-${Date.now().toString(36)}${randomBytes(2).toString('hex')}`.slice(0, 80);
      if ((await this.startNamed(releaseId, name)) === 'started') return name;
    }
  }

  async ensureRunning(releaseId: string, current: string | undefined): Promise<{ started: string | null }> {
    const name = current ?? releaseId;
    try {
      const out = await this.sfn.send(
        new DescribeExecutionCommand({ executionArn: this.executionArn(name) }),
      );
      if (out.status === 'RUNNING') return { started: null };
    } catch (err) {
      if ((err as Error).name !== 'ExecutionDoesNotExist') throw err;
      // Never started here (e.g. a local restart: executions live in the process): the plain name is free.
      if ((await this.startNamed(releaseId, releaseId)) === 'started') return { started: releaseId };
    }
    return { started: await this.startFresh(releaseId) };
  }
}

/** The ReleaseOrchestrator port on Step Functions: start, and wake/cancel through the latch (wake-latch.ts). */
export class SfnReleaseOrchestrator implements ReleaseOrchestrator {
  constructor(
    private readonly executions: Executions,
    private readonly latch: WakeLatch,
  ) {}

  async start(releaseId: string): Promise<void> {
    await this.executions.start(releaseId);
  }

  async wake(releaseId: string): Promise<void> {
    await this.latch.wake(releaseId);
  }

  /**
   * The release is `canceling`: wake its execution, and if no execution drives it any more (it died of an
   * infrastructure error, or the process that ran it locally was restarted), start one, so a canceling release
   * always reaches its end.
   */
  async cancel(releaseId: string): Promise<void> {
    const { delivered, extras } = await this.latch.wake(releaseId);
    if (delivered || extras === null) return;
    const current =
      typeof extras[EXECUTION_NAME] === 'string' ? (extras[EXECUTION_NAME] as string) : undefined;
    const { started } = await this.executions.ensureRunning(releaseId, current);
    if (started) log.warn('canceling release had no running execution; started one', { releaseId, started });
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
  return { orchestrator: new SfnReleaseOrchestrator(executions, latch), executions, latch };
}
