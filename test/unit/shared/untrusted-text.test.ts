import { describe, expect, it } from 'vitest';
import { UNTRUSTED_TEXT_MAX, untrusted } from '#functions/shared/untrusted-text.js';

describe('text a task service chose, as the coordinator repeats it', () => {
  it('quotes a short string whole', () => {
    expect(untrusted('TA_1')).toBe('"TA_1"');
    expect(untrusted('a\nb')).toBe('"a\\nb"');
  });

  it('cuts a 900,000-character string to 200 characters and notes its length', () => {
    const shown = untrusted('x'.repeat(900_000));
    expect(shown).toBe(`"${'x'.repeat(UNTRUSTED_TEXT_MAX)}…" (900000 characters)`);
    expect(UNTRUSTED_TEXT_MAX).toBe(200);
  });

  it('shows other values as their JSON, cut the same way, and never ends on half a surrogate pair', () => {
    expect(untrusted(42)).toBe('"42"');
    expect(untrusted({ a: 1 })).toBe('"{\\"a\\":1}"');
    expect(untrusted(Array.from({ length: 100_000 }, () => 1))).toMatch(/…" \(200001 characters\)$/);
    expect(untrusted(undefined)).toBe('"undefined"');
    const emoji = untrusted(`${'a'.repeat(199)}😀tail`);
    expect(emoji).toBe(`"${'a'.repeat(199)}…" (205 characters)`);
  });
});
