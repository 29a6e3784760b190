import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '#clients/upload/hash.js';

async function* chunksOf(bytes: Uint8Array, size: number) {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

describe('sha256Hex', () => {
  const bytes = randomBytes(100_003);
  const expected = createHash('sha256').update(bytes).digest('hex');

  it('hashes a stream of chunks as node:crypto hashes the whole, with @noble/hashes by default', async () => {
    expect(await sha256Hex(chunksOf(bytes, 4096))).toBe(expected);
  });

  it("takes node:crypto's Hash as the hasher", async () => {
    expect(await sha256Hex(chunksOf(bytes, 65_536), () => {}, createHash('sha256'))).toBe(expected);
  });

  it('reports the bytes hashed so far after each chunk', async () => {
    const seen: number[] = [];
    await sha256Hex(chunksOf(bytes, 40_000), (n) => seen.push(n));
    expect(seen).toEqual([40_000, 80_000, 100_003]);
  });

  it('hashes an empty file', async () => {
    expect(await sha256Hex(chunksOf(new Uint8Array(0), 1))).toBe(createHash('sha256').digest('hex'));
  });
});
