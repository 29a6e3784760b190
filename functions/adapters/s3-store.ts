import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { ObjectStore, UploadedObject } from '../files/ports.js';

const isNotFound = (err: unknown) => {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404;
};

/** S3's answers to a CompleteMultipartUpload that are the uploader's fault, not the service's. */
const CLIENT_PART_ERRORS = new Set([
  'InvalidPart',
  'InvalidPartOrder',
  'NoSuchUpload',
  'EntityTooSmall',
  'MalformedXML',
  'InvalidRequest',
]);

/**
 * The study-file bucket behind the ObjectStore port, on @aws-sdk/client-s3 and @aws-sdk/s3-request-presigner. The
 * client must be built with checksums WHEN_REQUIRED (s3Client() in functions/adapters/aws.ts is): the SDK's default
 * CRC32 would be signed into presigned PUTs as the checksum of an empty body.
 */
export class S3ObjectStore implements ObjectStore {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
  ) {}

  presignPut(key: string, sha256Base64: string, expiresIn: number): Promise<string> {
    // The declared SHA-256 travels in the signed query string: S3 rejects a body that does not match it and stores
    // the checksum, which the confirmation then reads back instead of re-reading the bytes.
    return getSignedUrl(
      this.s3,
      new PutObjectCommand({ Bucket: this.bucket, Key: key, ChecksumSHA256: sha256Base64 }),
      { expiresIn },
    );
  }

  async startMultipart(key: string, contentType: string): Promise<string> {
    // S3 keeps a CRC64NVME of the whole object and checks the assembled bytes against the parts it received
    // (s3rver ignores checksums; the SHA-256 the worker computes is the check that runs everywhere).
    const out = await this.s3.send(
      new CreateMultipartUploadCommand({
        Bucket: this.bucket,
        Key: key,
        ContentType: contentType,
        ChecksumAlgorithm: 'CRC64NVME',
        ChecksumType: 'FULL_OBJECT',
      }),
    );
    if (!out.UploadId) throw new Error('S3 returned no UploadId');
    return out.UploadId;
  }

  presignPart(key: string, uploadId: string, partNumber: number, expiresIn: number): Promise<string> {
    return getSignedUrl(
      this.s3,
      new UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumber: partNumber }),
      { expiresIn },
    );
  }

  async completeMultipart(
    key: string,
    uploadId: string,
    parts: { partNumber: number; etag: string }[],
    size: number,
  ): Promise<{ ok: true } | { ok: false; reason: string }> {
    try {
      await this.s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts.map((p) => ({ PartNumber: p.partNumber, ETag: p.etag })) },
          ChecksumType: 'FULL_OBJECT',
          // S3 refuses to assemble an object of another size than declared.
          MpuObjectSize: size,
        }),
      );
      return { ok: true };
    } catch (err) {
      const name = (err as { name?: string }).name ?? '';
      if (CLIENT_PART_ERRORS.has(name)) return { ok: false, reason: name };
      throw err;
    }
  }

  async abortMultipart(key: string, uploadId: string): Promise<void> {
    try {
      await this.s3.send(
        new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }),
      );
    } catch (err) {
      // Already completed or aborted: nothing left to clean up.
      if (!isNotFound(err) && (err as { name?: string }).name !== 'NoSuchUpload') throw err;
    }
  }

  async stat(key: string): Promise<UploadedObject | null> {
    try {
      const out = await this.s3.send(
        new HeadObjectCommand({ Bucket: this.bucket, Key: key, ChecksumMode: 'ENABLED' }),
      );
      const sum = out.ChecksumSHA256;
      // A multipart object reports a composite checksum ("<b64>-<parts>"): not the hash of the whole object.
      const full = sum && !sum.includes('-') && out.ChecksumType !== 'COMPOSITE' ? sum : null;
      return { size: out.ContentLength ?? 0, sha256Base64: full };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async hash(key: string, opts: { deadlineMs?: number } = {}): Promise<string> {
    const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    const digest = createHash('sha256');
    const body = out.Body as Readable;
    for await (const chunk of body) {
      if (opts.deadlineMs !== undefined && Date.now() > opts.deadlineMs) {
        body.destroy();
        throw Object.assign(new Error(`hashing ${key} ran past its deadline`), { code: 'deadline' });
      }
      digest.update(chunk as Buffer);
    }
    return digest.digest('hex');
  }

  async read(key: string): Promise<Uint8Array> {
    const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    if (!out.Body) throw new Error(`S3 returned no body for ${key}`);
    return out.Body.transformToByteArray();
  }

  presignGet(
    key: string,
    opts: { contentDisposition: string; contentType: string; expiresIn: number; signedAtMs?: number },
  ): Promise<string> {
    return getSignedUrl(
      this.s3,
      new GetObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ResponseContentDisposition: opts.contentDisposition,
        ResponseContentType: opts.contentType,
        ResponseCacheControl: 'no-store',
      }),
      {
        expiresIn: opts.expiresIn,
        ...(opts.signedAtMs === undefined ? {} : { signingDate: new Date(opts.signedAtMs) }),
      },
    );
  }

  async delete(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      const out = await this.s3.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
        }),
      );
      const failed = (out.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
      if (failed.length)
        throw new Error(`S3 could not delete ${failed.map((e) => `${e.Key}: ${e.Code}`).join(', ')}`);
    }
  }
}
