import { describe, expect, it } from 'vitest';
import type { VersionRecord } from '#functions/files/model.js';
import type { FilesDeps } from '#functions/files/ports.js';
import { verifyUpload } from '#functions/files/uploads.js';
import { FakeClock } from '#functions/shared/clock.js';

const version: VersionRecord = {
  id: 'FV_00000001',
  file_id: 'SF_00000001',
  study_id: 'SD_00000001',
  key: 'k',
  file_name: 'a.bin',
  size: 10,
  content_type: 'application/octet-stream',
  sha256: 'a'.repeat(64),
  state: 'verifying',
  created_at: '2026-01-01T00:00:00.000000Z',
  created_by: null,
  confirmed_at: null,
  multipart: null,
};

function deps(hash: () => Promise<string>, state: VersionRecord['state'] = 'verifying') {
  const finished: unknown[] = [];
  const deleted: string[][] = [];
  const d = {
    clock: new FakeClock(0),
    files: {
      getVersion: async () => ({ ...version, state }),
      finishUpload: async (_v: VersionRecord, outcome: unknown) => {
        finished.push(outcome);
        return true;
      },
    },
    store: {
      stat: async () => ({ size: 10, sha256Base64: null }),
      hash,
      delete: async (keys: string[]) => void deleted.push(keys),
    },
  } as unknown as Pick<FilesDeps, 'files' | 'store' | 'clock'>;
  return { d, finished, deleted };
}

const target = { fileId: version.file_id, versionId: version.id };

describe('the upload verification worker', () => {
  it('makes a verifying version available when the hash matches', async () => {
    const { d, finished, deleted } = deps(async () => 'a'.repeat(64));
    expect(await verifyUpload(d, target)).toEqual({ outcome: 'available' });
    expect(finished).toEqual([expect.objectContaining({ state: 'available', from: 'verifying' })]);
    expect(deleted).toEqual([]);
  });

  it('fails the version and deletes the object when the hash differs', async () => {
    const { d, finished, deleted } = deps(async () => 'b'.repeat(64));
    expect((await verifyUpload(d, target)).outcome).toBe('failed');
    expect(finished).toEqual([expect.objectContaining({ state: 'failed', from: 'verifying' })]);
    expect(deleted).toEqual([['k']]);
  });

  it('fails the version (instead of leaving it verifying) when hashing runs out of budget', async () => {
    const { d, finished } = deps(async () => {
      throw Object.assign(new Error('late'), { code: 'deadline' });
    });
    const out = await verifyUpload(d, target, { deadlineMs: 1 });
    expect(out.outcome).toBe('failed');
    expect(out.reason).toMatch(/budget/);
    expect(finished).toHaveLength(1);
  });

  it('leaves a version that is not verifying alone, and lets store errors through for a retry', async () => {
    const skipped = deps(async () => 'a'.repeat(64), 'available');
    expect((await verifyUpload(skipped.d, target)).outcome).toBe('skipped');
    expect(skipped.finished).toEqual([]);
    const broken = deps(async () => {
      throw new Error('S3 is down');
    });
    await expect(verifyUpload(broken.d, target)).rejects.toThrow('S3 is down');
    expect(broken.finished).toEqual([]);
  });
});
