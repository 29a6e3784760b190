import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReleaseHarness, startReleaseHarness } from '#test/helpers/release-harness.js';

/**
 * A brief outage of the coordinator's token endpoint is an infrastructure hiccup, not a task service's failure: the
 * step that needed the token throws Orchestration.Transient, the state machine retries it, and the release carries
 * on. The classification goes by the error's code, so it holds in the minified bundles too (the bundled project
 * runs this file against them), where the class name TokenUnavailableError does not survive.
 */
describe('a token endpoint outage', () => {
  let h: ReleaseHarness;
  beforeAll(async () => {
    h = await startReleaseHarness(
      {},
      // Tokens shorter-lived than the refresh margin are never cached, so every step asks the endpoint; retries
      // wait up to 400 ms each (full jitter), so the outage below lasts about a second of retrying.
      { tokenLifetime: 20, retryIntervalMs: 400 },
    );
  });
  afterAll(async () => {
    await h?.close();
  });

  it('is retried, and the release still stages', async () => {
    await h.addServices(1, { stageMs: 100 });
    // The next three token requests get 503: the first attempts of the release's first step that calls out.
    h.api.idp.refuseTokens(3);
    const rel = await h.createRelease();
    const staged = await h.waitForState(rel.item_id, ['staged', 'failed', 'canceled'], 30_000);
    expect(staged.state).toBe('staged');
    expect(h.api.idp.refused()).toBe(3);
    expect(staged.tasks.map((t: any) => t.state)).toEqual(['staged']);
    const errors = (await h.events(rel.item_id)).filter((e) => e.event_type === 'error');
    expect(errors).toEqual([]);
    // The release is still driven: publish goes through with a token that is now available.
    expect((await h.api.call('POST', `/releases/${rel.item_id}/publish`)).status).toBe(200);
    expect((await h.waitForState(rel.item_id, ['published', 'failed'], 30_000)).state).toBe('published');
  });
});
