import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startStepFunctions } from '#local/step-functions/endpoint.js';
import { type ReleaseHarness, startReleaseHarness } from '#test/helpers/release-harness.js';

/**
 * Releases that lost their execution: the Step Functions endpoint is stopped (its executions die with it) and
 * started again on the same port, as when the local stack is killed. The reconciler (run here in-process, as the
 * local stack's timer runs it) or the request that needs the execution (publish, cancel) gives the release a new
 * one, which carries on from the stored state.
 */
describe('releases without a running execution', () => {
  let h: ReleaseHarness;
  beforeAll(async () => {
    h = await startReleaseHarness();
  });
  afterEach(async () => {
    await h.reset();
  });
  afterAll(async () => {
    await h?.close();
  });

  /** The endpoint dies (taking its executions) and comes back empty on the same port. */
  async function restartEndpoint(): Promise<void> {
    const port = Number(new URL(h.sfn.endpoint).port);
    await h.sfn.stop();
    h.sfn = await startStepFunctions({ port, waitMs: (s, sec) => (s === 'PollWait' ? 250 : sec * 1000) });
  }

  it('POST /releases answers even when StartExecution fails; the reconciler then starts the release', async () => {
    await h.addServices(1);
    const port = Number(new URL(h.sfn.endpoint).port);
    await h.sfn.stop();
    const rel = await h.createRelease(); // StartExecution meets a closed port: logged, not an error
    expect(rel.state).toBe('initializing');
    h.sfn = await startStepFunctions({ port, waitMs: (s, sec) => (s === 'PollWait' ? 250 : sec * 1000) });
    expect(await h.execution(rel.item_id)).toBeUndefined();
    const report = await h.reconcile();
    expect(report.started).toContainEqual({ releaseId: rel.item_id, generation: 0 });
    await h.waitForState(rel.item_id, 'staged');
    await h.api.call('DELETE', `/releases/${rel.item_id}`);
    await h.waitForState(rel.item_id, 'canceled');
  });

  it('publish starts an execution when none is running', async () => {
    await h.addServices(1);
    const rel = await h.createRelease();
    await h.waitForState(rel.item_id, 'staged');
    await restartEndpoint();
    const res = await h.api.call('POST', `/releases/${rel.item_id}/publish`);
    expect(res.status).toBe(200);
    await h.waitForState(rel.item_id, 'published');
    expect(await h.execution(rel.item_id)).toBe('SUCCEEDED');
  });

  it('cancel starts an execution when none is running', async () => {
    await h.addServices(1, { stageMs: Number.POSITIVE_INFINITY, callbacks: false });
    const rel = await h.createRelease();
    await h.waitForState(rel.item_id, 'running');
    await restartEndpoint();
    expect((await h.api.call('DELETE', `/releases/${rel.item_id}`)).status).toBe(200);
    await h.waitForState(rel.item_id, 'canceled');
  });

  it('a release whose execution ended before the release did is handed to the next generation', async () => {
    await h.addServices(1, { stageMs: Number.POSITIVE_INFINITY, callbacks: false });
    const rel = await h.createRelease();
    await h.waitForState(rel.item_id, 'running');
    const { StopExecutionCommand } = await import('@aws-sdk/client-sfn');
    const arn = `${h.sfn.stateMachineArn.replace(':stateMachine:', ':execution:')}:${rel.item_id}-g0`;
    await h.sfnClient.send(new StopExecutionCommand({ executionArn: arn, cause: 'an infrastructure error' }));
    expect(await h.execution(rel.item_id)).toBe('ABORTED');
    expect((await h.reconcile()).started).toContainEqual({ releaseId: rel.item_id, generation: 1 });
    expect(await h.execution(rel.item_id, 1)).toBe('RUNNING');
    const task = h.services[0].tasks.values().next().value;
    if (task) {
      task.state = 'staged';
      task.progress = 100;
    }
    await h.waitForState(rel.item_id, 'staged');
    await h.api.call('DELETE', `/releases/${rel.item_id}`);
    await h.waitForState(rel.item_id, 'canceled');
  });
});
