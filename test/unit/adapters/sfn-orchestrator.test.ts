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
import { SfnExecutions, SfnTaskTokens } from '#functions/adapters/sfn-orchestrator.js';
import { LatchedReleaseOrchestrator } from '#functions/orchestration/release-orchestrator.js';
import { WakeLatch } from '#functions/orchestration/wake-latch.js';
import { MemoryReleases } from '../orchestration/fakes.js';

const ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:Release';
const CONFIG = {
  pollSeconds: 5,
  actionTimeoutSeconds: 15,
  stagedWaitSeconds: 86400,
  maxRounds: 300,
  maxPhaseSeconds: 172800,
};
const sfnMock = mockClient(SFNClient);
const meta = { $metadata: {} };
const executionArn = (name: string) => `arn:aws:states:us-east-1:123456789012:execution:Release:${name}`;

function setup() {
  const sfn = new SFNClient({ region: 'us-east-1' });
  const releases = new MemoryReleases();
  releases.add({ id: 'RE_1', state: 'canceling' });
  const executions = new SfnExecutions(sfn, ARN, CONFIG);
  const latch = new WakeLatch(releases, new SfnTaskTokens(sfn));
  return { releases, executions, orchestrator: new LatchedReleaseOrchestrator(executions, latch, releases) };
}
const startedNames = () => sfnMock.commandCalls(StartExecutionCommand).map((c) => c.args[0].input.name);

describe('Step Functions adapter', () => {
  beforeEach(() => sfnMock.reset());

  it('starts generation 0 of a new release, named <release>-g0, with the execution input', async () => {
    sfnMock.on(StartExecutionCommand).resolves({ executionArn: 'x', startDate: new Date() });
    await setup().orchestrator.start('RE_1');
    const input = sfnMock.commandCalls(StartExecutionCommand)[0].args[0].input;
    expect(input).toMatchObject({ stateMachineArn: ARN, name: 'RE_1-g0' });
    expect(JSON.parse(input.input ?? '')).toEqual({ releaseId: 'RE_1', generation: 0, config: CONFIG });
  });

  it('treats a repeated start as a no-op', async () => {
    sfnMock.on(StartExecutionCommand).rejects(new ExecutionAlreadyExists({ message: 'exists', ...meta }));
    await expect(setup().orchestrator.start('RE_1')).resolves.toBeUndefined();
    expect(await setup().executions.start('RE_1', 2)).toBe('exists');
  });

  it('reads an execution as running, ended or missing', async () => {
    const { executions } = setup();
    sfnMock
      .on(DescribeExecutionCommand)
      .resolvesOnce({ status: 'RUNNING' } as any)
      .resolvesOnce({ status: 'ABORTED' } as any)
      .rejectsOnce(new ExecutionDoesNotExist({ message: 'no', ...meta }));
    expect(await executions.status('RE_1', 3)).toBe('running');
    expect(await executions.status('RE_1', 3)).toBe('ended');
    expect(await executions.status('RE_1', 3)).toBe('missing');
    expect(sfnMock.commandCalls(DescribeExecutionCommand)[0].args[0].input.executionArn).toBe(
      executionArn('RE_1-g3'),
    );
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

  it('drive: a wake that reached its execution is all it takes', async () => {
    sfnMock.on(SendTaskSuccessCommand).resolves({});
    const { releases, orchestrator } = setup();
    await releases.exchangeExtras('RE_1', { set: { waitToken: 'tok' } });
    await orchestrator.drive('RE_1');
    expect(sfnMock.commandCalls(DescribeExecutionCommand)).toHaveLength(0);
  });

  it('drive: starts the next generation when the one that drove the release has ended', async () => {
    sfnMock.on(DescribeExecutionCommand).resolves({ status: 'FAILED' } as any);
    sfnMock.on(StartExecutionCommand).resolves({ executionArn: 'x', startDate: new Date() });
    const { releases, orchestrator } = setup();
    await releases.exchangeExtras('RE_1', { set: { generation: 2 } });
    await orchestrator.drive('RE_1');
    expect(sfnMock.commandCalls(DescribeExecutionCommand)[0].args[0].input.executionArn).toBe(
      executionArn('RE_1-g2'),
    );
    expect(startedNames()).toEqual(['RE_1-g3']);
    expect((await releases.load('RE_1'))?.extras.generation).toBe(3);
  });

  it('drive: starts the same generation when it never ran (a start that failed, a local restart)', async () => {
    sfnMock.on(DescribeExecutionCommand).rejects(new ExecutionDoesNotExist({ message: 'no', ...meta }));
    sfnMock.on(StartExecutionCommand).resolves({ executionArn: 'x', startDate: new Date() });
    await setup().orchestrator.drive('RE_1');
    expect(startedNames()).toEqual(['RE_1-g0']);
  });

  it('drive: leaves a running execution alone', async () => {
    sfnMock.on(DescribeExecutionCommand).resolves({ status: 'RUNNING' } as any);
    await setup().orchestrator.drive('RE_1');
    expect(sfnMock.commandCalls(StartExecutionCommand)).toHaveLength(0);
  });

  it('drive: never fails the request that changed the release; the reconciler takes over', async () => {
    sfnMock
      .on(DescribeExecutionCommand)
      .rejects(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));
    await expect(setup().orchestrator.drive('RE_1')).resolves.toBeUndefined();
  });
});
