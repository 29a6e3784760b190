import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReleaseHarness, startReleaseHarness } from '#test/helpers/release-harness.js';

/**
 * PhaseWatch end to end: the poll loop waits 10 minutes here, so a release reaches staged and published in seconds
 * only if the last task's callback woke it, through the coordinator table's stream (DynamoDB Local's), the
 * PhaseWatch handler and the release's wake latch. The callbacks themselves never wake anything.
 */
describe('PhaseWatch wakes the poll loop when the last task of a phase reports', () => {
  let h: ReleaseHarness;
  beforeAll(async () => {
    h = await startReleaseHarness({ POLL_SECONDS: '600' }, { pollWaitMs: 600_000, phaseWatch: true });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('stages and publishes a release of 12 services on their callbacks, without waiting for a poll', async () => {
    // Work long enough for the coordinator to record `running` before the callbacks, even on a busy machine.
    await h.addServices(12, { stageMs: 1500, publishMs: 500 });
    const rel = await h.createRelease();
    const t0 = Date.now();
    // 60 s only bounds a hang on a loaded machine; without the wake the release would wait out the 10-minute poll.
    const staged = await h.waitForState(rel.item_id, ['staged', 'failed', 'canceled'], 60_000);
    expect(staged.state).toBe('staged');
    expect(Date.now() - t0).toBeLessThan(120_000);
    expect((await h.api.call('POST', `/releases/${rel.item_id}/publish`)).status).toBe(200);
    const done = await h.waitForState(rel.item_id, ['published', 'failed', 'canceled'], 60_000);
    expect(done.state).toBe('published');
    // Every service reported twice (staged, published), each answered 200 at once.
    for (const s of h.services)
      expect(s.callbacks.map((c) => [c.state, c.status])).toEqual([
        ['staged', 200],
        ['published', 200],
      ]);
  });
});
