import { ListExecutionsCommand } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReleaseHarness, startReleaseHarness } from '../../helpers/release-harness.js';

/**
 * A staging longer than MAX_POLL_ROUNDS poll rounds (3 here; 1000 in production, below Step Functions' 25,000-event
 * history) continues in a fresh execution, which picks the release up where it is.
 */
describe('continue as new', () => {
  let h: ReleaseHarness;
  beforeAll(async () => {
    h = await startReleaseHarness({ MAX_POLL_ROUNDS: '3' });
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
    const fresh = (await executions()).find((e) => e.name !== rel.item_id);
    expect(fresh?.name).toMatch(new RegExp(`^${rel.item_id}-[0-9a-z]+$`));
    expect((await h.release(rel.item_id)).state).toBe('running');

    // The work ends; the fresh execution (or one of its own successors) stages the release.
    const task = svc.fake.tasks.values().next().value;
    if (task) {
      task.state = 'staged';
      task.progress = 100;
    }
    await h.waitForState(rel.item_id, 'staged');
    await h.api.call('DELETE', `/releases/${rel.item_id}`);
    await h.waitForState(rel.item_id, 'canceled');
    // The last execution ends right after writing `canceled`.
    for (let i = 0; i < 80 && (await executions()).some((e) => e.status === 'RUNNING'); i++)
      await new Promise((r) => setTimeout(r, 25));
    expect((await executions()).some((e) => e.status === 'RUNNING')).toBe(false);
  });
});
