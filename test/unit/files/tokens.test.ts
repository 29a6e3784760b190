import { describe, expect, it } from 'vitest';
import { hashToken, newDevToken, newSignedToken, tokenKind } from '#functions/files/tokens.js';

describe('tokens', () => {
  it('carry 256 random bits behind a prefix that tells the two kinds apart', () => {
    const signed = newSignedToken();
    const dev = newDevToken();
    expect(signed).toMatch(/^sfsu_[A-Za-z0-9_-]{43}$/);
    expect(dev).toMatch(/^sfdt_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(signed.slice(5), 'base64url')).toHaveLength(32);
    expect(tokenKind(signed)).toBe('signed');
    expect(tokenKind(dev)).toBe('developer');
    expect(tokenKind('sfsu_short')).toBe('unknown');
    expect(new Set(Array.from({ length: 1000 }, newSignedToken)).size).toBe(1000);
  });

  it('are stored as their SHA-256', () => {
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
