import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { type CallOptions, call, files, show } from './http.js';

export interface Uploaded {
  studyId: string;
  fileId: string;
  versionId: string;
  bytes: Buffer;
  /** The creation answer: {file, version, upload, confirm_url}. */
  created: any;
  /** The confirmation answer: the version. */
  confirmed: any;
}

/** Sample bytes that say where they came from, with a random tail so no two runs upload the same content. */
export function sampleBytes(size = 2048, label = 'e2e'): Buffer {
  const head = Buffer.from(`${label}\t${new Date().toISOString()}\n`);
  return Buffer.concat([head, randomBytes(Math.max(0, size - head.length))]).subarray(0, size);
}

/**
 * The three requests of a single-PUT upload: declare the file (size and SHA-256), PUT the bytes to the presigned URL
 * (no header: the checksum is signed into it), confirm.
 */
export async function upload(
  studyId: string,
  bytes: Buffer,
  opts: CallOptions & { fileName?: string; contentType?: string } = {},
): Promise<Uploaded> {
  const created = await files('POST', `/studies/${studyId}/files`, {
    ...opts,
    body: {
      file_name: opts.fileName ?? 'e2e-sample.tsv',
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      content_type: opts.contentType ?? 'text/tab-separated-values',
      description: 'uploaded by the end-to-end suite',
    },
  });
  expect(created.status, show(created)).toBe(201);
  expect(created.body.upload.type).toBe('single');
  // The declared SHA-256 travels as the header the URL's signature covers: S3 refuses the PUT without it.
  const put = await call('PUT', created.body.upload.url, {
    as: 'anonymous',
    body: bytes,
    headers: created.body.upload.headers,
  });
  expect(put.status, show(put)).toBe(200);
  const confirmed = await call('POST', created.body.confirm_url, { ...opts, body: {} });
  expect(confirmed.status, show(confirmed)).toBe(200);
  expect(confirmed.body.state).toBe('available');
  return {
    studyId,
    fileId: created.body.file.kf_id,
    versionId: created.body.version.kf_id,
    bytes,
    created: created.body,
    confirmed: confirmed.body,
  };
}
