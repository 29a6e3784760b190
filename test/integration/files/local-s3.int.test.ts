import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import { startS3 } from '#local/s3.js';

const dir = mkdtempSync(join(tmpdir(), 'local-s3-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const clientFor = (endpoint: string) =>
  new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });

describe('the local S3 component', () => {
  it('creates the bucket, says how to reach it, and keeps objects across a restart', async () => {
    const first = await startS3({ dir, port: 0, bucket: 'kept' });
    expect(first.env).toMatchObject({ S3_FORCE_PATH_STYLE: 'true', FILES_BUCKET: 'kept' });
    expect(first.env.AWS_ENDPOINT_URL_S3).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const c1 = clientFor(first.env.AWS_ENDPOINT_URL_S3);
    await c1.send(new PutObjectCommand({ Bucket: 'kept', Key: 'a/b', Body: 'persisted' }));
    c1.destroy();
    await first.stop();
    await first.stop();

    const second = await startS3({ dir, port: 0, bucket: 'kept' });
    const c2 = clientFor(second.env.AWS_ENDPOINT_URL_S3);
    const out = await c2.send(new GetObjectCommand({ Bucket: 'kept', Key: 'a/b' }));
    expect(await out.Body!.transformToString()).toBe('persisted');
    c2.destroy();
    await second.stop();
  });

  it('answers CORS for the origins it was given only (the dashboard’s, in npm start)', async () => {
    const s3 = await startS3({ dir, port: 0, bucket: 'cors', corsOrigins: ['http://127.0.0.1:3005'] });
    const preflight = (origin: string) =>
      fetch(`${s3.env.AWS_ENDPOINT_URL_S3}/cors/some-key`, {
        method: 'OPTIONS',
        headers: { Origin: origin, 'Access-Control-Request-Method': 'PUT' },
      });
    const allowed = await preflight('http://127.0.0.1:3005');
    expect(allowed.status).toBe(200);
    // s3rver answers a preflight it allows with `*`; one from another origin is refused.
    expect(allowed.headers.get('access-control-allow-origin')).not.toBeNull();
    const other = await preflight('https://elsewhere.example');
    expect(other.status).toBe(403);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    await s3.stop();
  });
});
