import { describe, expect, it } from 'vitest';
import { FakeClock, isoMicros } from '../../../functions/shared/clock.js';
import { isId, newId } from '../../../functions/shared/ids.js';

describe('ids', () => {
  it('are a prefix plus 8 Crockford base32 characters', () => {
    for (let i = 0; i < 200; i++) {
      const id = newId('RE');
      expect(id).toMatch(/^RE_[0-9A-HJKMNP-TV-Z]{8}$/);
      expect(isId('RE', id)).toBe(true);
    }
    expect(isId('RE', 'RE_0000000I')).toBe(false);
  });
});

describe('timestamps', () => {
  it('are ISO 8601 UTC with microseconds and Z', () => {
    expect(isoMicros(Date.UTC(2018, 8, 13, 19, 48, 49, 467) + 0.518)).toBe('2018-09-13T19:48:49.467518Z');
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    clock.advance(1500);
    expect(isoMicros(clock.nowMs())).toBe('2026-01-01T00:00:01.500000Z');
  });
});
