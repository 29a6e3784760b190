import { DescribeExecutionCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { SfnExecutions, SfnTaskTokens } from '#functions/adapters/sfn-orchestrator.js';
import { CORRELATION_ID } from '#functions/orchestration/correlation.js';
import { reconcile } from '#functions/orchestration/reconcile.js';
import { LatchedReleaseOrchestrator } from '#functions/orchestration/release-orchestrator.js';
import { WakeLatch } from '#functions/orchestration/wake-latch.js';
import { withLogContext } from '#functions/shared/log.js';
import { MemoryReleases, STEPS_RELEASE as REL, reply, STEPS_CONFIG, stepsSetup } from './fakes.js';

/**
 * A release's correlation id is stored with it and survives every restart: each execution of the release, whoever
 * starts it, carries it, and each action sent for the release says it as X-Request-Id.
 */
const ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:Release';
const sfnMock = mockClient(SFNClient);
const inputs = () =>
  sfnMock.commandCalls(StartExecutionCommand).map((c) => JSON.parse(c.args[0].input.input ?? '{}'));

function machine() {
  const sfn = new SFNClient({ region: 'us-east-1' });
  const releases = new MemoryReleases();
  const executions = new SfnExecutions(sfn, ARN, STEPS_CONFIG);
  const latch = new WakeLatch(releases, new SfnTaskTokens(sfn));
  return {
    releases,
    executions,
    latch,
    orchestrator: new LatchedReleaseOrchestrator(executions, latch, releases),
  };
}

describe('a release’s correlation id', () => {
  beforeEach(() => {
    sfnMock.reset();
    sfnMock.on(StartExecutionCommand).resolves({ executionArn: 'x', startDate: new Date() });
  });

  it('is stored when the release’s first execution starts, from the creating request', async () => {
    const { releases, orchestrator } = machine();
    releases.add({ id: REL });
    await withLogContext({ correlation_id: 'create-1' }, () => orchestrator.start(REL));
    expect((await releases.load(REL))?.extras[CORRELATION_ID]).toBe('create-1');
    expect(inputs()[0].config.correlationId).toBe('create-1');
  });

  it('goes to every later execution, not the id of whoever starts it (reconciler, publish, cancel)', async () => {
    const { releases, executions, latch, orchestrator } = machine();
    releases.add({ id: REL, state: 'running' });
    await releases.exchangeExtras(REL, { set: { [CORRELATION_ID]: 'create-1', generation: 2 } });
    // A restart: generation 2 is gone; the reconciler starts it again.
    sfnMock
      .on(DescribeExecutionCommand)
      .rejects(Object.assign(new Error('no'), { name: 'ExecutionDoesNotExist' }));
    await withLogContext({ correlation_id: 'reconciler-run' }, () =>
      reconcile({ releases, executions, latch, concurrency: 1 }),
    );
    // Then an operator's cancel finds it ended and hands it to the next generation.
    sfnMock.on(DescribeExecutionCommand).resolves({ status: 'FAILED' } as never);
    await withLogContext({ correlation_id: 'cancel-request' }, () => orchestrator.drive(REL));
    expect(inputs().map((i) => [i.generation, i.config.correlationId])).toEqual([
      [2, 'create-1'],
      [3, 'create-1'],
    ]);
  });

  it('is the X-Request-Id of every action, whatever the execution carried', async () => {
    const { releases, calls, run } = stepsSetup(() => reply('running'), 2, { state: 'running' }, [
      { state: 'running' },
      { state: 'running' },
    ]);
    await releases.exchangeExtras(REL, { set: { [CORRELATION_ID]: 'create-1' } });
    await withLogContext({ correlation_id: 'some-other-execution' }, () => run('poll'));
    expect(calls.requestIds).toEqual(['create-1', 'create-1']);
  });

  it('is adopted from the execution when the release has none stored (a release from before)', async () => {
    const { releases, calls, run } = stepsSetup(() => reply('running'), 1, { state: 'running' }, [
      { state: 'running' },
    ]);
    await withLogContext({ correlation_id: 'exec-0' }, () => run('poll'));
    expect((await releases.load(REL))?.extras[CORRELATION_ID]).toBe('exec-0');
    await withLogContext({ correlation_id: 'exec-1' }, () => run('poll'));
    expect(calls.requestIds).toEqual(['exec-0', 'exec-0']);
  });

  it('goes on with the release when it continues as a new execution', async () => {
    const { releases, startedWith, run } = stepsSetup(() => reply('running'), 1, { state: 'running' }, [
      { state: 'running' },
    ]);
    await releases.exchangeExtras(REL, { set: { [CORRELATION_ID]: 'create-1' } });
    await withLogContext({ correlation_id: 'step' }, () => run('continue', { generation: 0 }));
    expect(startedWith).toEqual(['create-1']);
  });
});
