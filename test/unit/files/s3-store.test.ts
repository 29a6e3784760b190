import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../../functions/adapters/s3-store.js';

const client = new S3Client({
  region: 'us-east-1',
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
  requestChecksumCalculation: 'WHEN_REQUIRED',
  responseChecksumValidation: 'WHEN_REQUIRED',
});
const s3 = mockClient(client);
const store = new S3ObjectStore(client, 'study-files');
const err = (name: string, status = 400) =>
  Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } });

afterEach(() => s3.reset());

describe('presigned URLs', () => {
  it('sign the declared SHA-256 into an upload URL, and no SDK default checksum', async () => {
    const url = new URL(await store.presignPut('studies/SD/files/SF/versions/FV', 'q83vEjRWeJA=', 300));
    expect(url.hostname).toBe('study-files.s3.us-east-1.amazonaws.com');
    expect(url.searchParams.get('x-amz-checksum-sha256')).toBe('q83vEjRWeJA=');
    expect(url.searchParams.get('x-amz-checksum-crc32')).toBeNull();
    expect(url.searchParams.get('x-amz-sdk-checksum-algorithm')).toBeNull();
    expect(url.searchParams.get('X-Amz-Expires')).toBe('300');
  });

  it('sign a short-lived download with the file name, content type and no-store', async () => {
    const url = new URL(
      await store.presignGet('k', {
        contentDisposition: 'attachment; filename="a b"',
        contentType: 'text/csv',
        expiresIn: 60,
      }),
    );
    expect(url.searchParams.get('X-Amz-Expires')).toBe('60');
    expect(url.searchParams.get('response-content-disposition')).toBe('attachment; filename="a b"');
    expect(url.searchParams.get('response-content-type')).toBe('text/csv');
    expect(url.searchParams.get('response-cache-control')).toBe('no-store');
  });

  it('sign each multipart part with its number and upload id', async () => {
    const url = new URL(await store.presignPart('k', 'upload-1', 7, 120));
    expect(url.searchParams.get('partNumber')).toBe('7');
    expect(url.searchParams.get('uploadId')).toBe('upload-1');
  });
});

describe('checking an uploaded object', () => {
  it('reports size and a whole-object SHA-256, asking S3 for checksums', async () => {
    s3.on(HeadObjectCommand).resolves({ ContentLength: 11, ChecksumSHA256: 'abc=' });
    expect(await store.stat('k')).toEqual({ size: 11, sha256Base64: 'abc=' });
    expect(s3.commandCalls(HeadObjectCommand)[0].args[0].input).toMatchObject({
      Key: 'k',
      ChecksumMode: 'ENABLED',
    });
  });

  it('ignores a composite (multipart) checksum, which is not the hash of the object', async () => {
    s3.on(HeadObjectCommand).resolves({
      ContentLength: 11,
      ChecksumSHA256: 'abc=-3',
      ChecksumType: 'COMPOSITE',
    });
    expect(await store.stat('k')).toEqual({ size: 11, sha256Base64: null });
  });

  it('answers null for a missing object', async () => {
    s3.on(HeadObjectCommand).rejects(err('NotFound', 404));
    expect(await store.stat('k')).toBeNull();
  });

  it('hashes the stored bytes as a stream', async () => {
    s3.on(GetObjectCommand).resolves({
      Body: Readable.from([Buffer.from('hello '), Buffer.from('world')]) as any,
    });
    expect(await store.hash('k')).toBe('b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9');
  });
});

describe('multipart uploads and deletes', () => {
  it('creates multipart uploads with the full-object CRC64NVME checksum and completes them at the declared size', async () => {
    s3.on(CreateMultipartUploadCommand).resolves({ UploadId: 'up-1' });
    s3.on(CompleteMultipartUploadCommand).resolves({});
    expect(await store.startMultipart('k', 'text/csv')).toBe('up-1');
    expect(s3.commandCalls(CreateMultipartUploadCommand)[0].args[0].input).toMatchObject({
      ChecksumAlgorithm: 'CRC64NVME',
      ChecksumType: 'FULL_OBJECT',
      ContentType: 'text/csv',
    });
    expect(await store.completeMultipart('k', 'up-1', [{ partNumber: 1, etag: '"e"' }], 123)).toEqual({
      ok: true,
    });
    expect(s3.commandCalls(CompleteMultipartUploadCommand)[0].args[0].input).toMatchObject({
      ChecksumType: 'FULL_OBJECT',
      MpuObjectSize: 123,
    });
  });

  it('turns S3 refusing the parts into a reason, and lets other failures through', async () => {
    s3.on(CompleteMultipartUploadCommand).rejects(err('InvalidPart'));
    expect(await store.completeMultipart('k', 'u', [{ partNumber: 1, etag: '"e"' }], 5)).toEqual({
      ok: false,
      reason: 'InvalidPart',
    });
    s3.on(CompleteMultipartUploadCommand).rejects(err('InternalError', 500));
    await expect(store.completeMultipart('k', 'u', [{ partNumber: 1, etag: '"e"' }], 5)).rejects.toThrow(
      'InternalError',
    );
  });

  it('treats aborting an upload that is already gone as done', async () => {
    s3.on(AbortMultipartUploadCommand).rejects(err('NoSuchUpload', 404));
    await expect(store.abortMultipart('k', 'u')).resolves.toBeUndefined();
  });

  it('deletes in batches of 1000 and fails loudly when S3 could not delete a key', async () => {
    s3.on(DeleteObjectsCommand).resolves({});
    await store.delete(Array.from({ length: 2500 }, (_, i) => `k${i}`));
    const calls = s3.commandCalls(DeleteObjectsCommand).map((c) => c.args[0].input.Delete?.Objects?.length);
    expect(calls).toEqual([1000, 1000, 500]);
    s3.on(DeleteObjectsCommand).resolves({ Errors: [{ Key: 'k1', Code: 'AccessDenied' }] });
    await expect(store.delete(['k1'])).rejects.toThrow('AccessDenied');
  });
});
