import {
  DescribeExecutionCommand,
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  SendTaskSuccessCommand,
  SFNClient,
  StartExecutionCommand,
  TaskTimedOut,
} from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  SfnExecutions,
  SfnReleaseOrchestrator,
  SfnTaskTokens,
} from '../../../functions/adapters/sfn-orchestrator.js';
import { WakeLatch } from '../../../functions/orchestration/wake-latch.js';
import { MemoryReleases } from './fakes.js';

const ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:Release';
const CONFIG = { pollSeconds: 5, actionTimeoutSeconds: 15, stagedWaitSeconds: 86400, maxRounds: 1000 };
const sfnMock = mockClient(SFNClient);
const meta = { $metadata: {} };

function setup() {
  const sfn = new SFNClient({ region: 'us-east-1' });
  const releases = new MemoryReleases();
  releases.add({ id: 'RE_1', state: 'canceling' });
  const executions = new SfnExecutions(sfn, ARN, CONFIG);
  const latch = new WakeLatch(releases, new SfnTaskTokens(sfn));
  return { releases, executions, orchestrator: new SfnReleaseOrchestrator(executions, latch) };
}

describe('Step Functions adapter', () => {
  beforeEach(() => sfnMock.reset());

  it('starts the execution named after the release with the run config as input', async () => {
    sfnMock.on(StartExecutionCommand).resolves({ executionArn: 'x', startDate: new Date() });
    await setup().orchestrator.start('RE_1');
    const input = sfnMock.commandCalls(StartExecutionCommand)[0].args[0].input;
    expect(input).toMatchObject({ stateMachineArn: ARN, name: 'RE_1' });
    expect(JSON.parse(input.input ?? '')).toEqual({ releaseId: 'RE_1', config: CONFIG });
  });

  it('treats a repeated start as a no-op', async () => {
    sfnMock.on(StartExecutionCommand).rejects(new ExecutionAlreadyExists({ message: 'exists', ...meta }));
    await expect(setup().orchestrator.start('RE_1')).resolves.toBeUndefined();
  });

  it('wakes a waiting execution with SendTaskSuccess on the stored token, and only once', async () => {
    sfnMock.on(SendTaskSuccessCommand).resolves({});
    const { releases, orchestrator } = setup();
    await releases.exchangeExtras('RE_1', { set: { waitToken: 'tok' } });
    await orchestrator.wake('RE_1');
    await orchestrator.wake('RE_1');
    const calls = sfnMock.commandCalls(SendTaskSuccessCommand);
    expect(calls).toHaveLength(1);
    expect(calls[0].args[0].input.taskToken).toBe('tok');
  });

  it('takes a stale token calmly: the wake stays latched', async () => {
    sfnMock.on(SendTaskSuccessCommand).rejects(new TaskTimedOut({ message: 'gone', ...meta }));
    const { releases, orchestrator } = setup();
    await releases.exchangeExtras('RE_1', { set: { waitToken: 'old' } });
    await orchestrator.wake('RE_1');
    expect((await releases.load('RE_1'))?.extras.wakePending).toBe(true);
  });

  it('on cancel, starts a fresh execution when the one that drove the release has ended', async () => {
    sfnMock.on(DescribeExecutionCommand).resolves({ status: 'FAILED' } as any);
    sfnMock.on(StartExecutionCommand).resolves({ executionArn: 'x', startDate: new Date() });
    const { releases, orchestrator } = setup();
    await releases.exchangeExtras('RE_1', { set: { executionName: 'RE_1' } });
    await orchestrator.cancel('RE_1');
    expect(sfnMock.commandCalls(DescribeExecutionCommand)[0].args[0].input.executionArn).toBe(
      'arn:aws:states:us-east-1:123456789012:execution:Release:RE_1',
    );
    const name = sfnMock.commandCalls(StartExecutionCommand)[0].args[0].input.name ?? '';
    expect(name).toMatch(/^RE_1-[0-9a-z]+$/);
    expect(name.length).toBeLessThanOrEqual(80);
  });

  it('on cancel, leaves a running execution alone', async () => {
    sfnMock.on(DescribeExecutionCommand).resolves({ status: 'RUNNING' } as any);
    await setup().orchestrator.cancel('RE_1');
    expect(sfnMock.commandCalls(StartExecutionCommand)).toHaveLength(0);
  });

  it('resumes under the plain release id where no execution of that name exists (a fresh local endpoint)', async () => {
    sfnMock.on(DescribeExecutionCommand).rejects(new ExecutionDoesNotExist({ message: 'no', ...meta }));
    sfnMock.on(StartExecutionCommand).resolves({ executionArn: 'x', startDate: new Date() });
    const { executions } = setup();
    expect(await executions.ensureRunning('RE_1', 'RE_1-abc')).toEqual({ started: 'RE_1' });
  });
});
