import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';

/**
 * SHA-256 in the shape both @noble/hashes (the default, which browsers run) and node:crypto's Hash have; drc passes
 * node:crypto's, which is native and several times faster on large files.
 */
export interface Hasher {
  update(bytes: Uint8Array): unknown;
  digest(): Uint8Array;
}

/** The hex SHA-256 of a stream of bytes, in constant memory, reporting the bytes hashed so far. */
export async function sha256Hex(
  chunks: AsyncIterable<Uint8Array>,
  onHashed: (bytes: number) => void = () => {},
  hasher: Hasher = sha256.create(),
): Promise<string> {
  let hashed = 0;
  for await (const chunk of chunks) {
    hasher.update(chunk);
    hashed += chunk.byteLength;
    onHashed(hashed);
  }
  return bytesToHex(hasher.digest());
}
