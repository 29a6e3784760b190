import { describe, expect, it } from 'vitest';
import { FakeClock, isoMicros } from '#functions/shared/clock.js';

describe('timestamps', () => {
  it('are ISO 8601 UTC with microseconds and Z', () => {
    expect(isoMicros(Date.UTC(2018, 8, 13, 19, 48, 49, 467) + 0.518)).toBe('2018-09-13T19:48:49.467518Z');
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    clock.advance(1500);
    expect(isoMicros(clock.nowMs())).toBe('2026-01-01T00:00:01.500000Z');
  });
});
