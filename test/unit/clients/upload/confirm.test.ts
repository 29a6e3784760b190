import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { waitUntilVerified } from '#clients/upload/confirm.js';
import { UploadError } from '#clients/upload/io.js';
import { uploadVersion } from '#clients/upload/upload.js';
import { fakeUploadService, must } from '#test/helpers/upload-service.js';

async function* once(bytes: Uint8Array) {
  yield bytes;
}
const ids = { fileId: 'SF_00000001', versionId: 'FV_00000001' };

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

describe('the confirmation and the verification', () => {
  it("refuses a version whose recorded SHA-256 is not the file's", async () => {
    const bytes = randomBytes(8);
    const svc = fakeUploadService(bytes, { recordedSha: 'f'.repeat(64) });
    const upload = uploadVersion(
      { files: svc.files, must, put: svc.put },
      { target: { studyId: 'SD_00000001' }, file_name: 'c.bin', size: 8, chunks: () => once(bytes) },
    );
    await expect(upload).rejects.toThrow(UploadError);
    await expect(upload).rejects.toThrow(/SHA-256 f{64} differs from the file's [0-9a-f]{64}/);
  });

  it('polls while the service verifies, and fails when the verification fails', async () => {
    const bytes = randomBytes(8);
    const svc = fakeUploadService(bytes, { multipartAbove: 4, verifyPolls: 1, failVerification: true });
    const upload = uploadVersion(
      { files: svc.files, must, put: svc.put },
      { target: { studyId: 'SD_00000001' }, file_name: 'd.bin', size: 8, chunks: () => once(bytes) },
    );
    await expect(settle(upload)).rejects.toThrow(
      'the service refused the upload: version FV_00000001 failed verification',
    );
    expect(svc.calls.filter((c) => c.method === 'GET')).toHaveLength(2);
  });

  it('stops polling when the upload is aborted', async () => {
    const bytes = randomBytes(8);
    const svc = fakeUploadService(bytes, { verifyPolls: 100 });
    const abort = new AbortController();
    const io = { files: svc.files, must, put: svc.put, signal: abort.signal };
    await uploadVersion(io, { target: { studyId: 'S' }, file_name: 'e', size: 8, chunks: () => once(bytes) });
    const waiting = waitUntilVerified(io, ids, 'x');
    abort.abort();
    await expect(settle(waiting)).rejects.toThrow();
    expect(svc.calls.filter((c) => c.method === 'GET').length).toBeLessThan(3);
  });
});
