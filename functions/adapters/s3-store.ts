import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { CopyOutcome, ObjectStore, PresignedGet, PresignedPut, UploadedObject } from '../files/ports.js';

/** The header that carries the declared SHA-256 of a single PUT: signed, so the uploader must send exactly it. */
const CHECKSUM_HEADER = 'x-amz-checksum-sha256';

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

  async presignPut(key: string, sha256Base64: string, expiresIn: number): Promise<PresignedPut> {
    // The declared SHA-256 is a signed header, not a query parameter: S3 checks an `x-amz-checksum-sha256` header
    // against the body and refuses a mismatch, and a request without that very header fails its signature. The
    // presigner would otherwise hoist it into the query string, where S3 is not known to enforce it. The service
    // does not rely on either: the confirmation checks the bytes it copies (functions/files/uploads.ts).
    const url = await getSignedUrl(
      this.s3,
      new PutObjectCommand({ Bucket: this.bucket, Key: key, ChecksumSHA256: sha256Base64 }),
      { expiresIn, unhoistableHeaders: new Set([CHECKSUM_HEADER]) },
    );
    return { url, headers: { [CHECKSUM_HEADER]: sha256Base64 } };
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
      return { size: out.ContentLength ?? 0, sha256Base64: full, etag: out.ETag ?? null };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async copy(from: string, to: string, opts: { sourceEtag: string | null }): Promise<CopyOutcome> {
    try {
      await this.s3.send(
        new CopyObjectCommand({
          Bucket: this.bucket,
          Key: to,
          CopySource: `${this.bucket}/${encodeURI(from)}`,
          // Only the object the caller checked (its size) is copied; a PUT that replaced it since is not.
          ...(opts.sourceEtag ? { CopySourceIfMatch: opts.sourceEtag } : {}),
          // The destination is written once: a second copy (a concurrent or repeated confirmation) cannot replace
          // bytes that were already verified.
          IfNoneMatch: '*',
          // S3 computes the SHA-256 of the copy and keeps it, so HeadObject reports it without reading the bytes.
          ChecksumAlgorithm: 'SHA256',
          MetadataDirective: 'COPY',
        }),
      );
      return 'copied';
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (isNotFound(err)) return 'source_missing';
      // 412 is either precondition: the source changed, or the destination exists. Which one, S3 does not say.
      if (e.name === 'PreconditionFailed' || e.$metadata?.httpStatusCode === 412)
        return (await this.stat(to)) ? 'exists' : 'source_changed';
      // A concurrent write to the destination (409 ConditionalRequestConflict): the caller looks again.
      if (e.name === 'ConditionalRequestConflict' || e.$metadata?.httpStatusCode === 409)
        return 'source_changed';
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

  async presignGet(
    key: string,
    opts: { contentDisposition: string; contentType: string; expiresIn: number; signedAtMs?: number },
  ): Promise<PresignedGet> {
    const signedAtMs = opts.signedAtMs ?? Date.now();
    const expiresIn = await this.signableSeconds(opts.expiresIn, signedAtMs);
    const url = await getSignedUrl(
      this.s3,
      new GetObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ResponseContentDisposition: opts.contentDisposition,
        ResponseContentType: opts.contentType,
        ResponseCacheControl: 'no-store',
      }),
      { expiresIn, ...(opts.signedAtMs === undefined ? {} : { signingDate: new Date(opts.signedAtMs) }) },
    );
    return { url, expiresAtMs: signedAtMs + expiresIn * 1000 };
  }

  /**
   * `wanted` seconds, or fewer when the signing credentials expire sooner: S3 refuses a presigned request once the
   * session that signed it has ended, whatever X-Amz-Expires says. Credentials without an expiry (long-term keys,
   * or session keys given in the environment, as Lambda gives its role's) leave it as it is.
   */
  private async signableSeconds(wanted: number, signedAtMs: number): Promise<number> {
    const credentials = await this.s3.config.credentials();
    const expiration = credentials.expiration?.getTime();
    if (expiration === undefined) return wanted;
    return Math.max(1, Math.min(wanted, Math.floor((expiration - signedAtMs) / 1000)));
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
