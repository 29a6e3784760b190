import { afterEach, describe, expect, it } from 'vitest';
import { AwsHttp, S3_SERVICE } from '../../../functions/adapters/aws-http.js';
import { S3Http } from '../../../functions/adapters/s3-http.js';
import { S3ObjectStore } from '../../../functions/adapters/s3-store.js';
import { type Canned, RecordingHandler } from '../../helpers/recording-handler.js';

/**
 * The object store's behaviour on S3's answers, with a recording handler in place of the network (the requests
 * themselves are compared with the SDK's in test/unit/adapters/aws-signing.test.ts).
 */
const handler = new RecordingHandler();
const http = new AwsHttp(S3_SERVICE, {
  region: 'us-east-1',
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
  requestHandler: handler,
});
const store = new S3ObjectStore(new S3Http(http, false), 'study-files');
const s3Error = (code: string, status = 400): Canned => ({
  status,
  body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`,
});

afterEach(() => {
  handler.requests.length = 0;
  handler.answer();
});

describe('presigned URLs', () => {
  it('sign the declared SHA-256 into an upload URL, and no SDK default checksum', async () => {
    const url = new URL(await store.presignPut('studies/SD/files/SF/versions/FV', 'q83vEjRWeJA=', 300));
    expect(url.hostname).toBe('study-files.s3.us-east-1.amazonaws.com');
    expect(url.searchParams.get('x-amz-checksum-sha256')).toBe('q83vEjRWeJA=');
    expect(url.searchParams.get('x-amz-checksum-crc32')).toBeNull();
    expect(url.searchParams.get('x-amz-sdk-checksum-algorithm')).toBeNull();
    expect(url.searchParams.get('X-Amz-Expires')).toBe('300');
    expect(handler.requests).toHaveLength(0);
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

  it('start a download link’s lifetime at the time the service clock gives', async () => {
    const url = new URL(
      await store.presignGet('k', {
        contentDisposition: 'attachment',
        contentType: 'text/csv',
        expiresIn: 60,
        signedAtMs: Date.parse('2030-05-06T07:08:09Z'),
      }),
    );
    expect(url.searchParams.get('X-Amz-Date')).toBe('20300506T070809Z');
  });

  it('sign each multipart part with its number and upload id', async () => {
    const url = new URL(await store.presignPart('k', 'upload-1', 7, 120));
    expect(url.searchParams.get('partNumber')).toBe('7');
    expect(url.searchParams.get('uploadId')).toBe('upload-1');
  });
});

describe('checking an uploaded object', () => {
  it('reports size and a whole-object SHA-256, asking S3 for checksums', async () => {
    handler.answer({ headers: { 'content-length': '11', 'x-amz-checksum-sha256': 'abc=' } });
    expect(await store.stat('k')).toEqual({ size: 11, sha256Base64: 'abc=' });
    const sent = handler.last();
    expect(sent.method).toBe('HEAD');
    expect(sent.url).toBe('https://study-files.s3.us-east-1.amazonaws.com/k');
    expect(sent.headers).toContainEqual(['x-amz-checksum-mode', 'ENABLED']);
  });

  it('ignores a composite (multipart) checksum, which is not the hash of the object', async () => {
    handler.answer({
      headers: {
        'content-length': '11',
        'x-amz-checksum-sha256': 'abc=-3',
        'x-amz-checksum-type': 'COMPOSITE',
      },
    });
    expect(await store.stat('k')).toEqual({ size: 11, sha256Base64: null });
  });

  it('answers null for a missing object', async () => {
    handler.answer({ status: 404 });
    expect(await store.stat('k')).toBeNull();
  });

  it('hashes the stored bytes as a stream', async () => {
    handler.answer({ body: 'hello world' });
    expect(await store.hash('k')).toBe('b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9');
  });

  it('gives up hashing at its deadline with a recognisable error', async () => {
    handler.answer({ body: 'hello world' });
    await expect(store.hash('k', { deadlineMs: Date.now() - 1 })).rejects.toMatchObject({ code: 'deadline' });
  });
});

describe('multipart uploads and deletes', () => {
  it('creates multipart uploads with the full-object CRC64NVME checksum and completes them at the declared size', async () => {
    handler.answer({
      body: '<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>up-1</UploadId></InitiateMultipartUploadResult>',
    });
    expect(await store.startMultipart('k', 'text/csv')).toBe('up-1');
    const created = handler.last();
    expect(created.url).toBe('https://study-files.s3.us-east-1.amazonaws.com/k?uploads=');
    expect(created.headers).toEqual(
      expect.arrayContaining([
        ['content-type', 'text/csv'],
        ['x-amz-checksum-algorithm', 'CRC64NVME'],
        ['x-amz-checksum-type', 'FULL_OBJECT'],
      ]),
    );
    handler.answer({
      body: '<CompleteMultipartUploadResult><ETag>"e"</ETag></CompleteMultipartUploadResult>',
    });
    expect(await store.completeMultipart('k', 'up-1', [{ partNumber: 1, etag: '"e"' }], 123)).toEqual({
      ok: true,
    });
    const completed = handler.last();
    expect(completed.headers).toEqual(
      expect.arrayContaining([
        ['x-amz-checksum-type', 'FULL_OBJECT'],
        ['x-amz-mp-object-size', '123'],
      ]),
    );
    expect(completed.body).toContain('<Part><ETag>&quot;e&quot;</ETag><PartNumber>1</PartNumber></Part>');
  });

  it('fails when S3 starts a multipart upload without an id', async () => {
    handler.answer({ body: '<InitiateMultipartUploadResult></InitiateMultipartUploadResult>' });
    await expect(store.startMultipart('k', 'text/csv')).rejects.toThrow('no UploadId');
  });

  it('turns S3 refusing the parts into a reason, and lets other failures through', async () => {
    handler.answer(s3Error('InvalidPart'));
    expect(await store.completeMultipart('k', 'u', [{ partNumber: 1, etag: '"e"' }], 5)).toEqual({
      ok: false,
      reason: 'InvalidPart',
    });
    // A 200 whose body is an <Error> is S3 refusing late, as the SDK reads it.
    handler.answer({ status: 200, body: '<Error><Code>EntityTooSmall</Code><Message>x</Message></Error>' });
    expect(await store.completeMultipart('k', 'u', [{ partNumber: 1, etag: '"e"' }], 5)).toEqual({
      ok: false,
      reason: 'EntityTooSmall',
    });
    handler.answer(s3Error('AccessDenied', 403));
    await expect(store.completeMultipart('k', 'u', [{ partNumber: 1, etag: '"e"' }], 5)).rejects.toThrow(
      'AccessDenied',
    );
  });

  it('treats aborting an upload that is already gone as done', async () => {
    handler.answer(s3Error('NoSuchUpload', 404));
    await expect(store.abortMultipart('k', 'u')).resolves.toBeUndefined();
    expect(handler.last().method).toBe('DELETE');
    handler.answer(s3Error('AccessDenied', 403));
    await expect(store.abortMultipart('k', 'u')).rejects.toThrow('AccessDenied');
  });

  it('deletes in batches of 1000 and fails loudly when S3 could not delete a key', async () => {
    handler.answer({ body: '<DeleteResult></DeleteResult>' });
    await store.delete(Array.from({ length: 2500 }, (_, i) => `k${i}`));
    const batches = handler.requests.map((r) => (String(r.body).match(/<Object>/g) ?? []).length);
    expect(batches).toEqual([1000, 1000, 500]);
    expect(handler.requests.every((r) => r.query.delete === '' && r.method === 'POST')).toBe(true);
    handler.answer({
      body: '<DeleteResult><Error><Key>k1</Key><Code>AccessDenied</Code><Message>no</Message></Error></DeleteResult>',
    });
    await expect(store.delete(['k1'])).rejects.toThrow('k1: AccessDenied');
    handler.answer({
      body: '<DeleteResult><Error><Key>k1</Key><Code>NoSuchKey</Code></Error><Error><Key>k2</Key><Code>InternalError</Code></Error></DeleteResult>',
    });
    await expect(store.delete(['k1', 'k2'])).rejects.toThrow('S3 could not delete k2: InternalError');
  });
});
