import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fetchIntoFile } from '#cli/transfer.js';

/** The download core on a fake server: what is asked for, and what ends up on disk. */
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const bytes = Buffer.from('0123456789abcdefghij');
const expected = { size: bytes.length, sha256: sha(bytes) };

function server(opts: { ignoresRange?: boolean } = {}) {
  const asked: number[] = [];
  const open = async (offset: number) => {
    asked.push(offset);
    if (offset > 0 && !opts.ignoresRange)
      return new Response(bytes.subarray(offset), {
        status: 206,
        headers: { 'Content-Range': `bytes ${offset}-${bytes.length - 1}/${bytes.length}` },
      });
    return new Response(bytes, { status: 200 });
  };
  return { asked, open };
}

const place = () => {
  const dir = mkdtempSync(join(tmpdir(), 'transfer-'));
  return { part: join(dir, 'f.part'), dest: join(dir, 'f') };
};

describe('fetching into a file', () => {
  it('writes a zero-byte file without asking for anything', async () => {
    const { part, dest } = place();
    const s = server();
    const empty = { size: 0, sha256: sha(Buffer.alloc(0)) };
    expect(await fetchIntoFile({ part, dest, expected: empty, open: s.open })).toEqual({ resumedFrom: 0 });
    expect(s.asked).toEqual([]);
    expect(readFileSync(dest).length).toBe(0);
    expect(existsSync(part)).toBe(false);
  });

  it('continues a part file with Range, and renames it once size and SHA-256 match', async () => {
    const { part, dest } = place();
    writeFileSync(part, bytes.subarray(0, 7));
    const s = server();
    expect(await fetchIntoFile({ part, dest, expected, open: s.open })).toEqual({ resumedFrom: 7 });
    expect(s.asked).toEqual([7]);
    expect(readFileSync(dest).equals(bytes)).toBe(true);
  });

  it('starts over when the server answers the whole object instead of the range', async () => {
    const { part, dest } = place();
    writeFileSync(part, bytes.subarray(0, 7));
    expect(await fetchIntoFile({ part, dest, expected, open: server({ ignoresRange: true }).open })).toEqual({
      resumedFrom: 0,
    });
    expect(readFileSync(dest).equals(bytes)).toBe(true);
  });

  it('deletes the part and fails on other bytes than the record says', async () => {
    const { part, dest } = place();
    const wrong = { ...expected, sha256: '0'.repeat(64) };
    await expect(fetchIntoFile({ part, dest, expected: wrong, open: server().open })).rejects.toThrow(
      /SHA-256 mismatch/,
    );
    expect(existsSync(part)).toBe(false);
    expect(existsSync(dest)).toBe(false);
  });

  it('names what the server said when it refuses', async () => {
    const { part, dest } = place();
    const open = async () =>
      new Response('<Error><Message>Request has expired</Message></Error>', { status: 403 });
    await expect(fetchIntoFile({ part, dest, expected, open })).rejects.toMatchObject({
      status: 403,
      message: 'download refused: Request has expired (HTTP 403)',
    });
  });
});
