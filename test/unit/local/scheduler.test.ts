import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { scheduledEvent, startSchedules } from '#local/scheduler.js';

describe('scheduled functions', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('builds the EventBridge scheduled event a Lambda receives', () => {
    const e = scheduledEvent('local-HealthCheck', new Date('2026-01-01T00:00:00.123Z'));
    expect(e).toMatchObject({
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      time: '2026-01-01T00:00:00Z',
      resources: [expect.stringMatching(/:rule\/local-HealthCheck$/)],
      detail: {},
    });
  });

  it('runs each schedule at its rate', async () => {
    const runs: string[] = [];
    const s = startSchedules([
      { name: 'fast', everyMs: 1000, run: async () => void runs.push('fast') },
      { name: 'slow', everyMs: 3000, run: async () => void runs.push('slow') },
    ]);
    await vi.advanceTimersByTimeAsync(3000);
    expect(runs.filter((r) => r === 'fast')).toHaveLength(3);
    expect(runs.filter((r) => r === 'slow')).toHaveLength(1);
    await s.stop();
    await vi.advanceTimersByTimeAsync(5000);
    expect(runs).toHaveLength(4);
  });

  it('skips a tick while the previous run is still going, and keeps going after a failure', async () => {
    let started = 0;
    let finish: () => void = () => {};
    const s = startSchedules([
      {
        name: 'slow-run',
        everyMs: 1000,
        run: () => {
          started++;
          if (started === 2) return Promise.reject(new Error('boom'));
          return new Promise<void>((r) => {
            finish = r;
          });
        },
      },
    ]);
    await vi.advanceTimersByTimeAsync(3000);
    expect(started).toBe(1);
    finish();
    await vi.advanceTimersByTimeAsync(1000);
    expect(started).toBe(2);
    await vi.advanceTimersByTimeAsync(1000);
    expect(started).toBe(3);
    const stopped = s.stop();
    let done = false;
    void stopped.then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(false);
    finish();
    await stopped;
    expect(done).toBe(true);
  });
});
