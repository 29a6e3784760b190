import { describe, expect, it } from 'vitest';
import { WakeLatch } from '../../../functions/orchestration/wake-latch.js';
import { MemoryReleases } from './fakes.js';

/** The latch that makes wakes never lost (issue 3, Callbacks). */
function setup() {
  const releases = new MemoryReleases();
  releases.add({ id: 'RE_1' });
  const answered: string[] = [];
  const live = new Set<string>();
  const latch = new WakeLatch(releases, {
    succeed: async (token) => {
      if (!live.has(token)) return 'stale';
      live.delete(token);
      answered.push(token);
      return 'delivered';
    },
  });
  const wait = async (token: string) => {
    live.add(token);
    return latch.arm('RE_1', token);
  };
  return { latch, answered, wait, live, releases };
}

describe('wake latch', () => {
  it('answers a waiting token at once when woken', async () => {
    const { latch, answered, wait } = setup();
    expect(await wait('t1')).toBe('waiting');
    expect((await latch.wake('RE_1')).delivered).toBe(true);
    expect(answered).toEqual(['t1']);
  });

  it('keeps a wake that came while nothing waited, and the next wait returns at once', async () => {
    const { latch, answered, wait } = setup();
    expect((await latch.wake('RE_1')).delivered).toBe(false);
    expect(await wait('t2')).toBe('woken');
    expect(answered).toEqual(['t2']);
  });

  it('keeps a wake whose token had already timed out', async () => {
    const { latch, answered, wait, live } = setup();
    await wait('t1');
    live.delete('t1'); // the wait timed out; the execution is polling
    expect((await latch.wake('RE_1')).delivered).toBe(false);
    expect(await wait('t2')).toBe('woken');
    expect(answered).toEqual(['t2']);
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
});
