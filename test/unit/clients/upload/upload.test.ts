import { createHash, randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { UploadProgress } from '#clients/upload/io.js';
import { uploadVersion } from '#clients/upload/upload.js';
import { fakeUploadService, must } from '#test/helpers/upload-service.js';

async function* once(bytes: Uint8Array) {
  yield bytes;
}
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

// The pauses between verification polls run on fake timers.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout'] });
});
afterEach(() => {
  vi.useRealTimers();
});
const settle = async <T>(p: Promise<T>) => {
  p.catch(() => {});
  await vi.runAllTimersAsync();
  return p;
};

describe('uploadVersion', () => {
  it('hashes, declares, sends one PUT with its signed headers, confirms, and answers the version', async () => {
    const bytes = randomBytes(10);
    const svc = fakeUploadService(bytes);
    const progress: UploadProgress['phase'][] = [];
    const started: string[] = [];
    const r = await uploadVersion(
      {
        files: svc.files,
        must,
        put: svc.put,
        onProgress: (p) => {
          if (progress.at(-1) !== p.phase) progress.push(p.phase);
        },
      },
      {
        target: { studyId: 'SD_00000001' },
        file_name: 'a.bin',
        size: bytes.length,
        name: 'A',
        chunks: () => once(bytes),
      },
      { onStarted: (_s, digest) => started.push(digest) },
    );
    expect(started).toEqual([sha(bytes)]);
    expect(svc.calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      'POST /studies/SD_00000001/files',
      'POST /files/SF_00000001/versions/FV_00000001/confirm',
    ]);
    expect(svc.calls[0].body).toEqual({ file_name: 'a.bin', size: 10, sha256: sha(bytes), name: 'A' });
    expect(svc.calls[1].body).toEqual({});
    expect(svc.puts).toHaveLength(1);
    expect(svc.puts[0].headers['x-amz-checksum-sha256']).toBe(
      Buffer.from(sha(bytes), 'hex').toString('base64'),
    );
    expect(r).toMatchObject({ file_id: 'SF_00000001', parts_sent: 1, version: { state: 'available' } });
    expect(progress).toEqual(['hashing', 'uploading', 'confirming']);
  });

  it('declares a new version of an existing file on its versions route', async () => {
    const bytes = randomBytes(3);
    const svc = fakeUploadService(bytes);
    await uploadVersion(
      { files: svc.files, must, put: svc.put },
      { target: { fileId: 'SF_00000001' }, file_name: 'a.bin', size: 3, chunks: () => once(bytes) },
    );
    expect(svc.calls[0]).toMatchObject({ method: 'POST', path: '/files/SF_00000001/versions' });
  });

  it('sends a multipart upload part by part, confirms with the ETags in order and waits for the verification', async () => {
    const bytes = randomBytes(10);
    const svc = fakeUploadService(bytes, { multipartAbove: 5, partSize: 4, firstUrls: 1, verifyPolls: 1 });
    const parts: number[] = [];
    const progress: UploadProgress[] = [];
    const r = await settle(
      uploadVersion(
        { files: svc.files, must, put: svc.put, onProgress: (p) => progress.push(p) },
        { target: { studyId: 'SD_00000001' }, file_name: 'b.bin', size: 10, chunks: () => once(bytes) },
        { onPart: (n) => parts.push(n) },
      ),
    );
    expect(parts.sort()).toEqual([1, 2, 3]);
    expect(Buffer.concat([1, 2, 3].map((n) => svc.stored.get(n)!)).equals(bytes)).toBe(true);
    // Part 1's URL came with the answer; 2 and 3 are signed together when part 2 needs one.
    const signings = svc.calls.filter((c) => c.path.endsWith('/upload-urls')).map((c) => c.body);
    expect(signings).toEqual([{ part_numbers: [2, 3] }]);
    const confirm = svc.calls.find((c) => c.path.endsWith('/confirm'))!;
    expect(confirm.body.parts.map((p: { part_number: number }) => p.part_number)).toEqual([1, 2, 3]);
    expect(svc.calls.filter((c) => c.method === 'GET')).toHaveLength(2);
    expect(r).toMatchObject({ parts_sent: 3, version: { state: 'available', sha256: sha(bytes) } });
    const uploading = progress.filter((p) => p.phase === 'uploading').map((p) => p.loaded);
    expect(uploading.at(-1)).toBe(10);
    expect(progress.map((p) => p.phase)).toContain('verifying');
  });
});
