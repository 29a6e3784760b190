import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkerHandler } from '#local/step-functions/model.js';
import { type ReleaseHarness, startReleaseHarness } from '#test/helpers/release-harness.js';

/**
 * A wait's arm (the PollWait function storing its task token) can land after that wait has timed out and the
 * execution has moved on to its next wait: a slow invocation, a write retried under load. It used to overwrite the
 * newer wait's token; publish then woke the dead token, and the staged release slept through it (CI saw exactly
 * that: "last state publishing"). Here every poll-kind arm is held back until the release waits for publish, then
 * all land at once: publish must still wake the release.
 */
describe('a late wait arm', () => {
  let h: ReleaseHarness;
  const held: Array<() => void> = [];
  const landed: Promise<unknown>[] = [];
  let stagedArmed = false;

  beforeAll(async () => {
    h = await startReleaseHarness(
      {},
      {
        wrap: (entry: string, handler: WorkerHandler): WorkerHandler => {
          if (!entry.endsWith('poll-wait.ts')) return handler;
          return async (event, context) => {
            if (event?.wait === 'staged') {
              const out = await handler(event, context);
              stagedArmed = true;
              return out;
            }
            if (stagedArmed) return handler(event, context);
            // A poll wait: its own timer (250 ms) ends the wait while its arm is held here.
            const run = new Promise<void>((resolve) => held.push(resolve)).then(() =>
              handler(event, context),
            );
            landed.push(run);
            return run;
          };
        },
      },
    );
  });
  afterAll(async () => {
    for (const release of held) release();
    await h?.close();
  });

  it('never hides the newer wait, so publish still wakes a staged release', async () => {
    await h.addServices(1, { stageMs: 50 });
    const rel = await h.createRelease();
    const staged = await h.waitForState(rel.item_id, ['staged', 'failed', 'canceled'], 30_000);
    expect(staged.state).toBe('staged');
    await expect.poll(() => stagedArmed, { timeout: 10_000 }).toBe(true);
    expect(held.length).toBeGreaterThan(0);
    // Every held poll arm now lands, after the wait for publish stored its token.
    for (const release of held.splice(0)) release();
    const outcomes = await Promise.all(landed);
    expect(outcomes).toContainEqual({ armed: 'superseded' });
    expect((await h.api.call('POST', `/releases/${rel.item_id}/publish`)).status).toBe(200);
    expect((await h.waitForState(rel.item_id, ['published', 'failed'], 30_000)).state).toBe('published');
  });
});
