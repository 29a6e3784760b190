import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { startS3 } from '#local/s3.js';

/**
 * A private s3rver for one test file (it starts in milliseconds), with the standard SDK env pointing at it. s3rver
 * accepts only the access key S3RVER; DynamoDB Local (shared db) accepts any key, so both work with these.
 */
export async function useLocalS3(bucket = 'study-files') {
  const dir = mkdtempSync(join(tmpdir(), 's3rver-'));
  const s3 = await startS3({ dir, port: 0, bucket });
  const env = { ...s3.env, AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };
  Object.assign(process.env, env);
  const client = new S3Client({
    endpoint: s3.env.AWS_ENDPOINT_URL_S3,
    region: process.env.AWS_REGION ?? 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return {
    env,
    bucket,
    /** A client of the test's own, to look at the bucket behind the service's back. */
    client,
    stop: async () => {
      client.destroy();
      await s3.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
