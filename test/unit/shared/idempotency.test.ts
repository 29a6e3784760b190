import { describe, expect, it } from 'vitest';
import { canonicalJson } from '#functions/shared/idempotency.js';

describe('the idempotency fingerprint', () => {
  it('sorts keys at every level and walks any depth without recursion', () => {
    expect(canonicalJson({ b: [1, { d: 1, c: [undefined, null] }], a: 'x', u: undefined })).toBe(
      '{"a":"x","b":[1,{"c":[null,null],"d":1}]}',
    );
    expect(canonicalJson(undefined)).toBe('null');
    // Far deeper than a recursive walk goes (one overflows near 6,000 levels): 50,000 levels.
    let deep: unknown = 1;
    for (let i = 0; i < 50_000; i++) deep = { k: [deep] };
    const text = canonicalJson(deep);
    expect(text.length).toBe(50_000 * 8 + 1);
    expect(text.startsWith('{"k":[{"k":[')).toBe(true);
  });
});
