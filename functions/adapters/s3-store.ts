import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import { XmlNode } from '@aws-sdk/xml-builder';
import type { ObjectStore, UploadedObject } from '../files/ports.js';
import { drain, type S3Http, xmlBody, xmlText } from './s3-http.js';

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

const S3_NS = 'http://s3.amazonaws.com/doc/2006-03-01/';

/** An XML list member that S3 may send once (an object) or several times (an array). */
const many = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/**
 * The study-file bucket behind the ObjectStore port, on signed S3 requests (functions/adapters/s3-http.ts) rather
 * than @aws-sdk/client-s3: each request is the one the SDK client sends with checksums WHEN_REQUIRED (no default
 * CRC32 signed into presigned PUTs as the checksum of an empty body), signature included, as
 * test/unit/adapters/aws-signing.test.ts proves operation by operation.
 */
export class S3ObjectStore implements ObjectStore {
  constructor(
    private readonly s3: S3Http,
    private readonly bucket: string,
  ) {}

  async presignPut(key: string, sha256Base64: string, expiresIn: number): Promise<string> {
    // The declared SHA-256 travels in the signed query string: S3 rejects a body that does not match it and stores
    // the checksum, which the confirmation then reads back instead of re-reading the bytes.
    const request = await this.s3.request('PUT', this.bucket, {
      key,
      query: { 'x-id': 'PutObject' },
      headers: { 'x-amz-checksum-sha256': sha256Base64 },
    });
    return this.s3.presign(request, { expiresIn });
  }

  async startMultipart(key: string, contentType: string): Promise<string> {
    // S3 keeps a CRC64NVME of the whole object and checks the assembled bytes against the parts it received
    // (s3rver ignores checksums; the SHA-256 the worker computes is the check that runs everywhere).
    const out = await this.s3.sendXml('POST', this.bucket, {
      key,
      query: { uploads: '' },
      headers: {
        'content-type': contentType,
        'x-amz-checksum-algorithm': 'CRC64NVME',
        'x-amz-checksum-type': 'FULL_OBJECT',
      },
    });
    if (typeof out.UploadId !== 'string' || !out.UploadId) throw new Error('S3 returned no UploadId');
    return out.UploadId;
  }

  async presignPart(key: string, uploadId: string, partNumber: number, expiresIn: number): Promise<string> {
    const request = await this.s3.request('PUT', this.bucket, {
      key,
      query: { 'x-id': 'UploadPart', partNumber: String(partNumber), uploadId },
    });
    return this.s3.presign(request, { expiresIn });
  }

  async completeMultipart(
    key: string,
    uploadId: string,
    parts: { partNumber: number; etag: string }[],
    size: number,
  ): Promise<{ ok: true } | { ok: false; reason: string }> {
    const doc = new XmlNode('CompleteMultipartUpload').a('xmlns', S3_NS);
    for (const p of parts)
      doc.c(new XmlNode('Part').c(xmlText('ETag', p.etag)).c(xmlText('PartNumber', String(p.partNumber))));
    try {
      await this.s3.sendXml(
        'POST',
        this.bucket,
        {
          key,
          query: { uploadId },
          headers: {
            'x-amz-checksum-type': 'FULL_OBJECT',
            // S3 refuses to assemble an object of another size than declared.
            'x-amz-mp-object-size': String(size),
            'content-type': 'application/xml',
          },
          body: xmlBody(doc),
        },
        { errorIn200: true },
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
      await drain(
        await this.s3.send('DELETE', this.bucket, {
          key,
          query: { 'x-id': 'AbortMultipartUpload', uploadId },
        }),
      );
    } catch (err) {
      // Already completed or aborted: nothing left to clean up.
      if (!isNotFound(err) && (err as { name?: string }).name !== 'NoSuchUpload') throw err;
    }
  }

  async stat(key: string): Promise<UploadedObject | null> {
    try {
      const out = await this.s3.send('HEAD', this.bucket, {
        key,
        headers: { 'x-amz-checksum-mode': 'ENABLED' },
      });
      await drain(out);
      const sum = out.headers['x-amz-checksum-sha256'];
      // A multipart object reports a composite checksum ("<b64>-<parts>"): not the hash of the whole object.
      const full =
        sum && !sum.includes('-') && out.headers['x-amz-checksum-type'] !== 'COMPOSITE' ? sum : null;
      const length = out.headers['content-length'];
      return { size: length === undefined ? 0 : Number(length), sha256Base64: full };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async hash(key: string, opts: { deadlineMs?: number } = {}): Promise<string> {
    const out = await this.s3.send('GET', this.bucket, { key, query: { 'x-id': 'GetObject' } });
    const digest = createHash('sha256');
    const body = out.body as Readable;
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
    const out = await this.s3.send('GET', this.bucket, { key, query: { 'x-id': 'GetObject' } });
    if (!out.body) throw new Error(`S3 returned no body for ${key}`);
    return drain(out);
  }

  async presignGet(
    key: string,
    opts: { contentDisposition: string; contentType: string; expiresIn: number; signedAtMs?: number },
  ): Promise<string> {
    const request = await this.s3.request('GET', this.bucket, {
      key,
      query: {
        'x-id': 'GetObject',
        'response-cache-control': 'no-store',
        'response-content-disposition': opts.contentDisposition,
        'response-content-type': opts.contentType,
      },
    });
    return this.s3.presign(request, {
      expiresIn: opts.expiresIn,
      signingDate: opts.signedAtMs === undefined ? undefined : new Date(opts.signedAtMs),
    });
  }

  async delete(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      const doc = new XmlNode('Delete').a('xmlns', S3_NS);
      for (const k of batch) doc.c(new XmlNode('Object').c(xmlText('Key', k)));
      doc.c(xmlText('Quiet', 'true'));
      const body = xmlBody(doc);
      // DeleteObjects is one of the operations S3 requires a checksum for; the SDK sends a CRC32 even with its
      // checksums WHEN_REQUIRED.
      const crc = Buffer.alloc(4);
      crc.writeUInt32BE(crc32(body));
      const out = await this.s3.sendXml('POST', this.bucket, {
        query: { delete: '' },
        headers: {
          'content-type': 'application/xml',
          'x-amz-sdk-checksum-algorithm': 'CRC32',
          'x-amz-checksum-crc32': crc.toString('base64'),
        },
        body,
      });
      const failed = many(out.Error as { Key?: string; Code?: string } | undefined).filter(
        (e) => e.Code !== 'NoSuchKey',
      );
      if (failed.length)
        throw new Error(`S3 could not delete ${failed.map((e) => `${e.Key}: ${e.Code}`).join(', ')}`);
    }
  }
}
