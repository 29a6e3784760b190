import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { HttpResponse } from '@smithy/core/protocols';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '#functions/adapters/s3-store.js';

/**
 * The object store on @aws-sdk/client-s3: presigned URLs from the SDK's presigner (no network), S3's answers from
 * aws-sdk-client-mock, and, where the wire matters (the multipart checksum headers), the SDK's own request as it
 * would leave the client. The integration suites run the same store against s3rver.
 */
const settings = {
  region: 'us-east-1',
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
  requestChecksumCalculation: 'WHEN_REQUIRED',
  responseChecksumValidation: 'WHEN_REQUIRED',
} as const;
const client = new S3Client(settings);
const s3 = mockClient(client);
const store = new S3ObjectStore(client, 'study-files');
const err = (name: string, status = 400) =>
  Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } });

afterEach(() => s3.reset());

describe('presigned URLs', () => {
  it('sign the declared SHA-256 as a header of the upload URL, never a query parameter, and no SDK default checksum', async () => {
    const put = await store.presignPut('staging/studies/SD/files/SF/versions/FV', 'q83vEjRWeJA=', 300);
    const url = new URL(put.url);
    expect(url.hostname).toBe('study-files.s3.us-east-1.amazonaws.com');
    expect(url.pathname).toBe('/staging/studies/SD/files/SF/versions/FV');
    // S3 is not known to enforce a checksum moved into the query string: it must be a header the signature covers,
    // so a PUT without it (or with another value) fails the signature, and S3 checks the body against it.
    expect(url.searchParams.get('x-amz-checksum-sha256')).toBeNull();
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('host;x-amz-checksum-sha256');
    expect(put.headers).toEqual({ 'x-amz-checksum-sha256': 'q83vEjRWeJA=' });
    expect(url.searchParams.get('x-amz-checksum-crc32')).toBeNull();
    expect(url.searchParams.get('x-amz-sdk-checksum-algorithm')).toBeNull();
    expect(url.searchParams.get('X-Amz-Expires')).toBe('300');
  });

  it('sign a download with the file name, content type and no-store, living as long as asked', async () => {
    const before = Date.now();
    const signed = await store.presignGet('k', {
      contentDisposition: 'attachment; filename="a b"',
      contentType: 'text/csv',
      expiresIn: 480,
    });
    const url = new URL(signed.url);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('480');
    expect(signed.expiresAtMs - before).toBeGreaterThanOrEqual(480_000);
    expect(signed.expiresAtMs - Date.now()).toBeLessThanOrEqual(480_000);
    expect(url.searchParams.get('response-content-disposition')).toBe('attachment; filename="a b"');
    expect(url.searchParams.get('response-content-type')).toBe('text/csv');
    expect(url.searchParams.get('response-cache-control')).toBe('no-store');
  });

  it('start a download link’s lifetime at the time the service clock gives', async () => {
    const signedAtMs = Date.parse('2030-05-06T07:08:09Z');
    const signed = await store.presignGet('k', {
      contentDisposition: 'attachment',
      contentType: 'text/csv',
      expiresIn: 60,
      signedAtMs,
    });
    expect(new URL(signed.url).searchParams.get('X-Amz-Date')).toBe('20300506T070809Z');
    expect(signed.expiresAtMs).toBe(signedAtMs + 60_000);
  });

  it('cut a download link’s life to what the signing session has left: the URL dies with it', async () => {
    const signedAtMs = Date.parse('2030-05-06T07:00:00Z');
    const session = new S3Client({
      ...settings,
      credentials: {
        accessKeyId: 'ASIAEXAMPLE',
        secretAccessKey: 'secret',
        sessionToken: 'token',
        expiration: new Date(signedAtMs + 20 * 60_000),
      },
    });
    const opts = { contentDisposition: 'attachment', contentType: 'text/csv', signedAtMs };
    const sessionStore = new S3ObjectStore(session, 'study-files');
    const long = await sessionStore.presignGet('k', { ...opts, expiresIn: 3600 });
    expect(new URL(long.url).searchParams.get('X-Amz-Expires')).toBe('1200');
    expect(long.expiresAtMs).toBe(signedAtMs + 1_200_000);
    const short = await sessionStore.presignGet('k', { ...opts, expiresIn: 360 });
    expect(new URL(short.url).searchParams.get('X-Amz-Expires')).toBe('360');
  });

  it('sign each multipart part with its number and upload id', async () => {
    const url = new URL(await store.presignPart('k', 'upload-1', 7, 120));
    expect(url.searchParams.get('partNumber')).toBe('7');
    expect(url.searchParams.get('uploadId')).toBe('upload-1');
    expect(url.searchParams.get('x-amz-sdk-checksum-algorithm')).toBeNull();
  });

  it('address the bucket path-style when asked (s3rver, MinIO, LocalStack)', async () => {
    const local = new S3Client({ ...settings, endpoint: 'http://127.0.0.1:4569', forcePathStyle: true });
    const url = new URL(await new S3ObjectStore(local, 'study-files').presignPart('a/b c', 'u', 1, 60));
    expect(`${url.origin}${url.pathname}`).toBe('http://127.0.0.1:4569/study-files/a/b%20c');
  });
});

describe('copying a staged upload to its version', () => {
  it('copies only the object checked, never over an existing one, keeping a SHA-256', async () => {
    s3.on(CopyObjectCommand).resolves({});
    expect(await store.copy('staging/a b', 'a b', { sourceEtag: '"e1"' })).toBe('copied');
    expect(s3.commandCalls(CopyObjectCommand)[0].args[0].input).toMatchObject({
      Bucket: 'study-files',
      Key: 'a b',
      CopySource: 'study-files/staging/a%20b',
      CopySourceIfMatch: '"e1"',
      IfNoneMatch: '*',
      ChecksumAlgorithm: 'SHA256',
    });
  });

  it('tells a destination already written from a source that changed (both are a 412)', async () => {
    s3.on(CopyObjectCommand).rejects(err('PreconditionFailed', 412));
    s3.on(HeadObjectCommand).resolves({ ContentLength: 3 });
    expect(await store.copy('s', 'd', { sourceEtag: '"e1"' })).toBe('exists');
    s3.on(HeadObjectCommand).rejects(err('NotFound', 404));
    expect(await store.copy('s', 'd', { sourceEtag: '"e1"' })).toBe('source_changed');
    s3.on(CopyObjectCommand).rejects(err('NoSuchKey', 404));
    expect(await store.copy('s', 'd', { sourceEtag: null })).toBe('source_missing');
  });
});

describe('checking an uploaded object', () => {
  it('reports size and a whole-object SHA-256, asking S3 for checksums', async () => {
    s3.on(HeadObjectCommand).resolves({ ContentLength: 11, ChecksumSHA256: 'abc=', ETag: '"e1"' });
    expect(await store.stat('k')).toEqual({ size: 11, sha256Base64: 'abc=', etag: '"e1"' });
    expect(s3.commandCalls(HeadObjectCommand)[0].args[0].input).toEqual({
      Bucket: 'study-files',
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
    expect(await store.stat('k')).toEqual({ size: 11, sha256Base64: null, etag: null });
  });

  it('answers null for a missing object, and lets other failures through', async () => {
    s3.on(HeadObjectCommand).rejects(err('NotFound', 404));
    expect(await store.stat('k')).toBeNull();
    s3.on(HeadObjectCommand).rejects(err('AccessDenied', 403));
    await expect(store.stat('k')).rejects.toThrow('AccessDenied');
  });

  it('hashes the stored bytes as a stream', async () => {
    s3.on(GetObjectCommand).resolves({
      Body: Readable.from([Buffer.from('hello '), Buffer.from('world')]) as never,
    });
    expect(await store.hash('k')).toBe('b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9');
  });

  it('gives up hashing at its deadline with a recognisable error', async () => {
    s3.on(GetObjectCommand).resolves({ Body: Readable.from([Buffer.from('hello world')]) as never });
    await expect(store.hash('k', { deadlineMs: Date.now() - 1 })).rejects.toMatchObject({ code: 'deadline' });
  });
});

describe('multipart uploads and deletes', () => {
  it('creates multipart uploads with the full-object CRC64NVME checksum and completes them at the declared size', async () => {
    s3.on(CreateMultipartUploadCommand).resolves({ UploadId: 'up-1' });
    s3.on(CompleteMultipartUploadCommand).resolves({});
    expect(await store.startMultipart('k', 'text/csv')).toBe('up-1');
    expect(s3.commandCalls(CreateMultipartUploadCommand)[0].args[0].input).toEqual({
      Bucket: 'study-files',
      Key: 'k',
      ContentType: 'text/csv',
      ChecksumAlgorithm: 'CRC64NVME',
      ChecksumType: 'FULL_OBJECT',
    });
    expect(await store.completeMultipart('k', 'up-1', [{ partNumber: 1, etag: '"e"' }], 123)).toEqual({
      ok: true,
    });
    expect(s3.commandCalls(CompleteMultipartUploadCommand)[0].args[0].input).toEqual({
      Bucket: 'study-files',
      Key: 'k',
      UploadId: 'up-1',
      MultipartUpload: { Parts: [{ PartNumber: 1, ETag: '"e"' }] },
      ChecksumType: 'FULL_OBJECT',
      MpuObjectSize: 123,
    });
  });

  it('puts the full-object checksum on the wire: the SDK’s own requests carry the headers S3 reads', async () => {
    const sent: { method: string; query: Record<string, unknown>; headers: Record<string, string> }[] = [];
    const wire = new S3Client({
      ...settings,
      requestHandler: {
        handle: async (request: {
          method: string;
          query: Record<string, unknown>;
          headers: Record<string, string>;
        }) => {
          sent.push(request);
          const body =
            request.method === 'POST' && 'uploads' in request.query
              ? '<InitiateMultipartUploadResult><UploadId>up-9</UploadId></InitiateMultipartUploadResult>'
              : '<CompleteMultipartUploadResult><ETag>"x"</ETag></CompleteMultipartUploadResult>';
          return {
            response: new HttpResponse({
              statusCode: 200,
              headers: {},
              body: Readable.from([Buffer.from(body)]),
            }),
          };
        },
      } as never,
    });
    const onWire = new S3ObjectStore(wire, 'study-files');
    expect(await onWire.startMultipart('k', 'text/csv')).toBe('up-9');
    expect(sent[0].headers).toMatchObject({
      'x-amz-checksum-algorithm': 'CRC64NVME',
      'x-amz-checksum-type': 'FULL_OBJECT',
      'content-type': 'text/csv',
    });
    expect(await onWire.completeMultipart('k', 'up-9', [{ partNumber: 1, etag: '"e"' }], 5_000_000)).toEqual({
      ok: true,
    });
    expect(sent[1].headers).toMatchObject({
      'x-amz-checksum-type': 'FULL_OBJECT',
      'x-amz-mp-object-size': '5000000',
    });
  });

  it('fails when S3 starts a multipart upload without an id', async () => {
    s3.on(CreateMultipartUploadCommand).resolves({});
    await expect(store.startMultipart('k', 'text/csv')).rejects.toThrow('no UploadId');
  });

  it('turns S3 refusing the parts into a reason, and lets other failures through', async () => {
    for (const reason of ['InvalidPart', 'InvalidPartOrder', 'EntityTooSmall']) {
      s3.on(CompleteMultipartUploadCommand).rejects(err(reason));
      expect(await store.completeMultipart('k', 'u', [{ partNumber: 1, etag: '"e"' }], 5)).toEqual({
        ok: false,
        reason,
      });
    }
    s3.on(CompleteMultipartUploadCommand).rejects(err('InternalError', 500));
    await expect(store.completeMultipart('k', 'u', [{ partNumber: 1, etag: '"e"' }], 5)).rejects.toThrow(
      'InternalError',
    );
  });

  it('treats aborting an upload that is already gone as done', async () => {
    s3.on(AbortMultipartUploadCommand).rejects(err('NoSuchUpload', 404));
    await expect(store.abortMultipart('k', 'u')).resolves.toBeUndefined();
    s3.on(AbortMultipartUploadCommand).rejects(err('AccessDenied', 403));
    await expect(store.abortMultipart('k', 'u')).rejects.toThrow('AccessDenied');
  });

  it('deletes in batches of 1000 and fails loudly when S3 could not delete a key', async () => {
    s3.on(DeleteObjectsCommand).resolves({});
    await store.delete(Array.from({ length: 2500 }, (_, i) => `k${i}`));
    const calls = s3.commandCalls(DeleteObjectsCommand).map((c) => c.args[0].input.Delete?.Objects?.length);
    expect(calls).toEqual([1000, 1000, 500]);
    s3.on(DeleteObjectsCommand).resolves({ Errors: [{ Key: 'k1', Code: 'AccessDenied' }] });
    await expect(store.delete(['k1'])).rejects.toThrow('k1: AccessDenied');
    s3.on(DeleteObjectsCommand).resolves({
      Errors: [
        { Key: 'k1', Code: 'NoSuchKey' },
        { Key: 'k2', Code: 'InternalError' },
      ],
    });
    await expect(store.delete(['k1', 'k2'])).rejects.toThrow('S3 could not delete k2: InternalError');
  });
});
