import { describe, expect, it } from 'vitest';
import { isId, newId } from '#functions/shared/ids.js';

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
