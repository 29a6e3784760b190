import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FilesApi, MiB, startFilesApi } from './harness.js';

/**
 * A multipart upload end to end: streamed part by part to s3rver (never held in memory whole), confirmed (202,
 * verifying), hashed by the verification worker streaming from S3, then downloadable by range. The bytes are
 * deterministic: block n is a fixed pseudo-random MiB with n written into its first eight bytes, so any range can
 * be recomputed to check what comes back.
 *
 * `npm test` uploads 200 MiB (four parts, over the 100 MiB multipart threshold); `npm run bench:upload` runs this
 * same scenario at 1 GiB (LARGE_UPLOAD_MIB=1024) and records its times in docs/benchmarks.md.
 */
const PART = 64 * MiB;
const SIZE_MIB = Number(process.env.LARGE_UPLOAD_MIB ?? 200);
const SIZE = SIZE_MIB * MiB + 123; // not a multiple of the part size: the last part is short

const base = (() => {
  const out = Buffer.alloc(MiB);
  let x = 0x9e3779b9;
  for (let i = 0; i < MiB; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out.writeUInt32LE(x >>> 0, i);
  }
  return out;
})();

/** The bytes [start, end) of the test object. */
function slice(start: number, end: number): Buffer {
  const out = Buffer.alloc(end - start);
  for (let pos = start; pos < end; ) {
    const block = Math.floor(pos / MiB);
    const chunk = Buffer.from(base);
    chunk.writeBigUInt64LE(BigInt(block), 0);
    const from = pos - block * MiB;
    const n = Math.min(MiB - from, end - pos);
    chunk.copy(out, pos - start, from, from + n);
    pos += n;
  }
  return out;
}

let api: FilesApi;
beforeAll(async () => {
  api = await startFilesApi({ MULTIPART_PART_SIZE_BYTES: String(PART) });
});
afterAll(async () => {
  await api?.close();
});

describe(`a multipart upload of ${SIZE_MIB} MiB`, () => {
  it('is confirmed, verified by the worker and downloadable', { timeout: 300_000 }, async () => {
    const started = Date.now();
    // The SHA-256 is computed as the parts are produced, so the whole object never sits in memory.
    const digest = createHash('sha256');
    for (let pos = 0; pos < SIZE; pos += 16 * MiB) digest.update(slice(pos, Math.min(SIZE, pos + 16 * MiB)));
    const created = await api.call('POST', `/studies/${api.studyA}/files`, {
      body: { file_name: 'genome.bam', size: SIZE, sha256: digest.digest('hex') },
    });
    expect(created.status).toBe(201);
    const { file, version, upload } = created.body;
    expect(upload).toMatchObject({ type: 'multipart', part_size: PART, part_count: Math.ceil(SIZE / PART) });
    const parts = [];
    for (const p of upload.parts) {
      const start = (p.part_number - 1) * PART;
      const put = await fetch(p.url, { method: 'PUT', body: slice(start, Math.min(SIZE, start + PART)) });
      expect(put.status).toBe(200);
      parts.push({ part_number: p.part_number, etag: put.headers.get('etag') });
    }
    const uploaded = Date.now();
    const confirmed = await api.call('POST', `/files/${file.kf_id}/versions/${version.kf_id}/confirm`, {
      body: { parts },
    });
    expect(confirmed.status).toBe(202);
    expect(confirmed.body.state).toBe('verifying');
    const done = await api.waitForVersion(file.kf_id, version.kf_id, (v) => v.state !== 'verifying', 240_000);
    expect(done.state).toBe('available');
    const verified = Date.now();

    const redirect = await api.call('GET', `/download/study/${api.studyA}/files/${file.kf_id}`);
    expect(redirect.status).toBe(302);
    const location = redirect.headers.get('location') as string;
    for (const [start, end] of [
      [0, 4096],
      [PART - 100, PART + 100],
      [Math.floor(SIZE / 2) + 7, Math.floor(SIZE / 2) + 70_000],
      [SIZE - 5000, SIZE],
    ]) {
      const res = await fetch(location, { headers: { Range: `bytes=${start}-${end - 1}` } });
      expect(res.status).toBe(206);
      expect(Buffer.from(await res.arrayBuffer()).equals(slice(start, end))).toBe(true);
    }
    process.stdout.write(
      `${SIZE_MIB} MiB multipart: upload ${((uploaded - started) / 1000).toFixed(1)} s, confirm+verify ${((verified - uploaded) / 1000).toFixed(1)} s, total ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    );
  });
});
