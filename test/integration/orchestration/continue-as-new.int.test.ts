import { ListExecutionsCommand } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReleaseHarness, startReleaseHarness } from '#test/helpers/release-harness.js';

/**
 * A staging longer than MAX_POLL_ROUNDS steps (3 here; 300 in production, which the ASL lint proves stays below
 * Step Functions' 25,000-event history) continues in the next generation's execution, which picks the release up
 * where it is. The staged wait loop hands over the same way.
 */
describe('continue as new', () => {
  let h: ReleaseHarness;
  beforeAll(async () => {
    h = await startReleaseHarness({ MAX_POLL_ROUNDS: '3', STAGED_WAIT_SECONDS: '1' });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('hands a long staging over to a fresh execution that finishes the release', async () => {
    const [svc] = await h.addServices(1, { stageMs: Number.POSITIVE_INFINITY, callbacks: false });
    const rel = await h.createRelease();
    await h.waitForState(rel.item_id, 'running');
    const executions = async () =>
      (
        (await h.sfnClient.send(new ListExecutionsCommand({ stateMachineArn: h.sfn.stateMachineArn })))
          .executions ?? []
      )
        .filter((e) => e.name?.startsWith(rel.item_id))
        .map((e) => ({ name: e.name, status: e.status }));
    for (let i = 0; i < 200 && (await h.execution(rel.item_id)) === 'RUNNING'; i++)
      await new Promise((r) => setTimeout(r, 25));
    expect(await h.execution(rel.item_id)).toBe('SUCCEEDED');
    expect((await executions()).map((e) => e.name)).toContain(`${rel.item_id}-g1`);
    expect((await h.release(rel.item_id)).state).toBe('running');
    // Every generation's name is used once, and at most one of them runs at a time.
    const names = (await executions()).map((e) => e.name);
    expect(new Set(names).size).toBe(names.length);
    expect((await executions()).filter((e) => e.status === 'RUNNING').length).toBeLessThanOrEqual(1);

    // The work ends; the fresh execution (or one of its own successors) stages the release.
    const task = svc.fake.tasks.values().next().value;
    if (task) {
      task.state = 'staged';
      task.progress = 100;
    }
    await h.waitForState(rel.item_id, 'staged');
    // Staged, it waits for publish 1 s at a time; each look counts, so that loop hands over too.
    const generation = async () =>
      Math.max(...(await executions()).map((e) => Number(e.name?.split('-g').pop())));
    const before = await generation();
    for (let i = 0; i < 400 && (await generation()) <= before; i++)
      await new Promise((r) => setTimeout(r, 25));
    expect(await generation()).toBeGreaterThan(before);
    expect((await h.release(rel.item_id)).state).toBe('staged');
    await h.api.call('DELETE', `/releases/${rel.item_id}`);
    await h.waitForState(rel.item_id, 'canceled');
    // The last execution ends right after writing `canceled`.
    for (let i = 0; i < 80 && (await executions()).some((e) => e.status === 'RUNNING'); i++)
      await new Promise((r) => setTimeout(r, 25));
    expect((await executions()).some((e) => e.status === 'RUNNING')).toBe(false);
  });
});
