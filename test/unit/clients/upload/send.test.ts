import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PutRequest } from '#clients/upload/io.js';
import { UploadError } from '#clients/upload/io.js';
import { finishMultipart, sendSingle } from '#clients/upload/send.js';
import { uploadVersion } from '#clients/upload/upload.js';
import { fakeUploadService, must } from '#test/helpers/upload-service.js';

async function* once(bytes: Uint8Array) {
  yield bytes;
}
const ids = { fileId: 'SF_00000001', versionId: 'FV_00000001' };

/** Declares an upload of `bytes` on the fake, so its routes know the file, and answers the start. */
async function declared(bytes: Uint8Array, opts: Parameters<typeof fakeUploadService>[1]) {
  const svc = fakeUploadService(bytes, opts);
  let started: any;
  const io = { files: svc.files, must, put: svc.put };
  const run = uploadVersion(
    { ...io, put: async () => ({ status: 599, etag: null, text: '' }) },
    { target: { studyId: 'SD_00000001' }, file_name: 'f.bin', size: bytes.length, chunks: () => once(bytes) },
    {
      onStarted: (s) => {
        started = s;
        throw new Error('declared');
      },
    },
  );
  await expect(run).rejects.toThrow('declared');
  svc.calls.length = 0;
  return { svc, io, started };
}

// The pauses between tries and between verification polls run on fake timers.
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

describe('finishMultipart', () => {
  it('sends only the parts not yet stored when it resumes', async () => {
    const bytes = randomBytes(12);
    const { svc, io } = await declared(bytes, { multipartAbove: 4, partSize: 4 });
    svc.stored.set(2, bytes.subarray(4, 8));
    const r = await settle(
      finishMultipart(
        io,
        { ...ids, size: 12, partSize: 4, partCount: 3, done: { 2: '"etag-2"' } },
        'x'.repeat(64),
      ),
    ).catch((err: Error) => err);
    expect(svc.puts.map((p) => p.part).sort()).toEqual([1, 3]);
    const confirm = svc.calls.find((c) => c.path.endsWith('/confirm'))!;
    expect(confirm.body.parts).toEqual([
      { part_number: 1, etag: expect.any(String) },
      { part_number: 2, etag: '"etag-2"' },
      { part_number: 3, etag: expect.any(String) },
    ]);
    // The fake records the SHA-256 declared, which this plan did not declare: the check refuses it.
    expect(r).toBeInstanceOf(UploadError);
  });

  it('signs URLs 100 parts at a time, from the first part that needs one', async () => {
    const bytes = randomBytes(250);
    const { svc, io, started } = await declared(bytes, { multipartAbove: 1, partSize: 1, firstUrls: 100 });
    const plan = { ...ids, size: 250, partSize: 1, partCount: 250, urls: started.upload.parts };
    await settle(finishMultipart(io, plan, started.version.sha256));
    const signings = svc.calls.filter((c) => c.path.endsWith('/upload-urls')).map((c) => c.body.part_numbers);
    expect(signings.map((b: number[]) => [b[0], b.at(-1), b.length])).toEqual([
      [101, 200, 100],
      [201, 250, 50],
    ]);
    expect(svc.stored.size).toBe(250);
  });

  it('keeps at most three parts in flight', async () => {
    const bytes = randomBytes(20);
    const { svc, io, started } = await declared(bytes, { multipartAbove: 1, partSize: 2, firstUrls: 10 });
    let inFlight = 0;
    let most = 0;
    const put = async (req: PutRequest, onSent: (n: number) => void) => {
      most = Math.max(most, ++inFlight);
      await Promise.resolve();
      const r = await svc.put(req, onSent);
      inFlight--;
      return r;
    };
    const plan = { ...ids, size: 20, partSize: 2, partCount: 10, urls: started.upload.parts };
    await settle(finishMultipart({ ...io, put }, plan, started.version.sha256));
    expect(most).toBe(3);
  });

  it('signs a part again when the storage refuses its signature, and tries other refusals again', async () => {
    const bytes = randomBytes(8);
    const refuse = (part: number, attempt: number) =>
      part === 1 && attempt === 1 ? 403 : part === 2 && attempt < 3 ? 503 : undefined;
    const { svc, io, started } = await declared(bytes, { multipartAbove: 1, partSize: 4, refuse });
    const plan = { ...ids, size: 8, partSize: 4, partCount: 2, urls: started.upload.parts };
    const r = await settle(finishMultipart(io, plan, started.version.sha256));
    expect(r.parts_sent).toBe(2);
    const part1 = svc.puts.filter((p) => p.part === 1).map((p) => p.url);
    const part2 = svc.puts.filter((p) => p.part === 2).map((p) => p.url);
    expect(part1).toHaveLength(2);
    expect(part1[0]).not.toBe(part1[1]);
    expect(new Set(part2).size).toBe(1);
    expect(part2).toHaveLength(3);
    expect(svc.calls.filter((c) => c.path.endsWith('/upload-urls')).map((c) => c.body)).toEqual([
      { part_numbers: [1] },
    ]);
  });

  it("fails after three refusals of a part, naming the part and S3's message", async () => {
    const bytes = randomBytes(8);
    const { io, started } = await declared(bytes, {
      multipartAbove: 1,
      partSize: 4,
      refuse: (part) => (part === 2 ? 500 : undefined),
    });
    const plan = { ...ids, size: 8, partSize: 4, partCount: 2, urls: started.upload.parts };
    const err = await settle(finishMultipart(io, plan, started.version.sha256)).catch((e: UploadError) => e);
    expect(err).toBeInstanceOf(UploadError);
    expect(err).toMatchObject({ part: 2, message: 'part 2 was refused: refused with 500 (HTTP 500)' });
  });

  it('fails at once when the storage hides the ETag', async () => {
    const bytes = randomBytes(8);
    const { io, started } = await declared(bytes, { multipartAbove: 1, partSize: 4, hideEtag: true });
    const plan = { ...ids, size: 8, partSize: 4, partCount: 2, urls: started.upload.parts };
    await expect(settle(finishMultipart(io, plan, started.version.sha256))).rejects.toThrow(
      /without its ETag/,
    );
  });
});

describe('sendSingle', () => {
  it('signs the PUT again after a 403, with the headers of the new signature', async () => {
    const bytes = randomBytes(8);
    const refuse = (_part: number, attempt: number) => (attempt === 1 ? 403 : undefined);
    const { svc, io, started } = await declared(bytes, { refuse });
    await settle(sendSingle(io, ids, started.upload, 8));
    expect(svc.calls.map((c) => c.body)).toEqual([{}]);
    expect(svc.puts).toHaveLength(2);
    expect(svc.puts[1].headers).toEqual(started.upload.headers);
    expect(svc.stored.get(1)).toEqual(bytes);
  });

  it('fails after three refusals', async () => {
    const bytes = randomBytes(8);
    const { io, started } = await declared(bytes, { refuse: () => 500 });
    await expect(settle(sendSingle(io, ids, started.upload, 8))).rejects.toThrow(
      'the upload was refused: refused with 500 (HTTP 500)',
    );
  });
});
