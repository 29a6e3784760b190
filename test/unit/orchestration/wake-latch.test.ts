import { describe, expect, it } from 'vitest';
import { WakeLatch, waitSequence, wakeOwed } from '#functions/orchestration/wake-latch.js';
import { MemoryReleases } from './fakes.js';

const T0 = '2026-11-27T05:00:00.000Z';

/** The latch that makes wakes never lost (docs/orchestration.md, Callbacks and the wake latch). */
function setup() {
  const releases = new MemoryReleases();
  releases.add({ id: 'RE_1' });
  const answered: string[] = [];
  const live = new Set<string>();
  let throttled = false;
  const latch = new WakeLatch(releases, {
    succeed: async (token) => {
      if (throttled) throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
      if (!live.has(token)) return 'stale';
      live.delete(token);
      answered.push(token);
      return 'delivered';
    },
  });
  const wait = async (token: string, kind: 'poll' | 'staged' = 'poll', seq?: string) => {
    live.add(token);
    return latch.arm('RE_1', token, kind, seq);
  };
  const extras = async () => (await releases.load('RE_1'))?.extras ?? {};
  return { latch, answered, wait, live, releases, extras, throttle: (on: boolean) => (throttled = on) };
}

describe('wake latch', () => {
  it('answers a waiting token at once when woken, then forgets the token', async () => {
    const { latch, answered, wait, extras } = setup();
    expect(await wait('t1')).toBe('waiting');
    expect(await extras()).toMatchObject({ waitToken: 't1', waitKind: 'poll' });
    expect((await latch.wake('RE_1')).outcome).toBe('delivered');
    expect(answered).toEqual(['t1']);
    expect((await extras()).waitToken).toBeUndefined();
  });

  it('keeps a wake that came while nothing waited, and the next wait returns at once', async () => {
    const { latch, answered, wait, extras } = setup();
    expect((await latch.wake('RE_1')).outcome).toBe('latched');
    expect(await wait('t2')).toBe('woken');
    expect(answered).toEqual(['t2']);
    expect((await extras()).waitToken).toBeUndefined();
  });

  it('keeps a wake whose token had already timed out', async () => {
    const { latch, answered, wait, live } = setup();
    await wait('t1');
    live.delete('t1'); // the wait timed out; the execution is polling
    expect((await latch.wake('RE_1')).outcome).toBe('latched');
    expect(await wait('t2')).toBe('woken');
    expect(answered).toEqual(['t2']);
  });

  it('a wake whose SendTaskSuccess fails leaves its token, so a second wake still wakes the wait', async () => {
    const { latch, answered, wait, extras, throttle } = setup();
    await wait('t1', 'staged');
    throttle(true);
    expect((await latch.wake('RE_1')).outcome).toBe('failed');
    expect(await extras()).toMatchObject({ waitToken: 't1', wakePending: true });
    expect(wakeOwed('publishing', await extras())).toBe(true);
    throttle(false);
    expect((await latch.wake('RE_1')).outcome).toBe('delivered');
    expect(answered).toEqual(['t1']);
    expect(wakeOwed('publishing', await extras())).toBe(false);
  });

  it('does not remove a newer token than the one it answered', async () => {
    const { latch, wait, releases, extras } = setup();
    await wait('t1');
    const original = releases.removeExtraIf.bind(releases);
    // A new wait arms between the SendTaskSuccess and the removal.
    releases.removeExtraIf = async (id, name, value) => {
      releases.removeExtraIf = original;
      await releases.exchangeExtras(id, { set: { waitToken: 't2' } });
      return original(id, name, value);
    };
    await latch.wake('RE_1');
    expect((await extras()).waitToken).toBe('t2');
  });

  it("a wait's arm that lands after the next wait's changes nothing, so a wake still reaches the live wait", async () => {
    const { latch, answered, wait, extras } = setup();
    // PollWait (order 7) timed out before its arm landed; the execution polled and now waits for publish (order 9).
    expect(await wait('t9', 'staged', waitSequence(0, T0, 9))).toBe('waiting');
    expect(await wait('t7', 'poll', waitSequence(0, T0, 7))).toBe('superseded');
    expect(await extras()).toMatchObject({ waitToken: 't9', waitKind: 'staged' });
    expect((await latch.wake('RE_1')).outcome).toBe('delivered');
    expect(answered).toEqual(['t9']);
  });

  it('orders waits by generation, then execution start, then steps, as strings compare', () => {
    const later = '2026-11-27T05:00:01.500Z';
    // A newer generation's first wait beats any wait of an older one.
    expect(waitSequence(1, T0, 0) > waitSequence(0, later, 9_999)).toBe(true);
    // The same generation started again (a restarted local endpoint) counts its steps from 0, and still wins.
    expect(waitSequence(0, later, 0) > waitSequence(0, T0, 300)).toBe(true);
    expect(waitSequence(2, T0, 10) > waitSequence(2, T0, 9)).toBe(true);
    expect(waitSequence(2, T0, 5)).toBe(waitSequence(2, T0, 5));
    // A start time that does not parse sorts first rather than failing the wait.
    expect(waitSequence(0, 'soon', 1) < waitSequence(0, T0, 1)).toBe(true);
  });

  it('a poll round clears the flag before reading, so an old wake does not wake the next wait', async () => {
    const { latch, wait } = setup();
    await latch.wake('RE_1');
    await latch.beginRound('RE_1');
    expect(await wait('t3')).toBe('waiting');
  });

  it('lets the execution move on when the release is gone', async () => {
    const { answered, wait, releases } = setup();
    releases.releases.clear();
    expect(await wait('t4')).toBe('missing');
    expect(answered).toEqual(['t4']);
  });

  it('owes a wake to an execution waiting for publish once the release is no longer staged', () => {
    const waiting = { waitToken: 't', waitKind: 'staged', wakePending: false };
    expect(wakeOwed('staged', waiting)).toBe(false);
    expect(wakeOwed('canceling', waiting)).toBe(true);
    expect(wakeOwed('running', { ...waiting, waitKind: 'poll' })).toBe(false);
    expect(wakeOwed('running', { wakePending: true })).toBe(false);
  });
});
