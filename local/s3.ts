import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import S3rver from 's3rver';
import { publicHost } from './config.js';

/**
 * s3rver standing in for S3 in the local stack and in tests. Objects persist under `dir`, so a restart keeps them.
 * Two differences from S3 matter (docs/local-emulators.md): s3rver never verifies SigV4 signatures (only the access
 * key id, which must be S3RVER, and the expiry), and it ignores checksums, so a confirmation re-reads the bytes to
 * check the SHA-256 that S3 itself would have verified on upload.
 */
export interface StartS3Options {
  dir: string;
  /** 0 picks a free port. */
  port: number;
  /** Interface to listen on; 127.0.0.1 by default. */
  host?: string;
  /** Bucket to create; FILES_BUCKET of the environment, else "study-files". */
  bucket?: string;
  /** Browser origins allowed by CORS (the dashboard's, for `npm start`); default `*`, for tests and benchmarks. */
  corsOrigins?: readonly string[];
}

export interface LocalS3 {
  name: 's3';
  /** What handlers need to reach it: the SDK's own endpoint setting, path-style addressing and the bucket. */
  env: { AWS_ENDPOINT_URL_S3: string; S3_FORCE_PATH_STYLE: 'true'; FILES_BUCKET: string };
  urls: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * Like the CDK bucket's CORS (lib/files-bucket.ts): browsers of the given origins may GET and PUT (multipart parts
 * need the ETag back). s3rver applies it again at every start, so a change of origins takes effect on a restart.
 */
function corsXml(origins: readonly string[]): string {
  const escapeXml = (s: string) => s.replace(/[<>&]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<CORSConfiguration>
  <CORSRule>
${origins.map((o) => `    <AllowedOrigin>${escapeXml(o)}</AllowedOrigin>`).join('\n')}
    <AllowedMethod>GET</AllowedMethod>
    <AllowedMethod>HEAD</AllowedMethod>
    <AllowedMethod>PUT</AllowedMethod>
    <AllowedHeader>*</AllowedHeader>
    <ExposeHeader>ETag</ExposeHeader>
    <ExposeHeader>Content-Disposition</ExposeHeader>
    <MaxAgeSeconds>3000</MaxAgeSeconds>
  </CORSRule>
</CORSConfiguration>`;
}

export async function startS3(opts: StartS3Options): Promise<LocalS3> {
  const host = opts.host ?? '127.0.0.1';
  const bucket = opts.bucket ?? process.env.FILES_BUCKET ?? 'study-files';
  const directory = resolve(opts.dir);
  mkdirSync(directory, { recursive: true });
  const server = new S3rver({
    port: opts.port,
    address: host,
    directory,
    silent: true,
    // Creating a bucket that already exists is a no-op in s3rver, so a restart keeps its objects.
    configureBuckets: [{ name: bucket, configs: [corsXml(opts.corsOrigins ?? ['*'])] }],
  });
  const address = (await server.run()) as AddressInfo;
  const endpoint = `http://${publicHost(host)}:${address.port}`;
  let stopped = false;
  return {
    name: 's3',
    env: { AWS_ENDPOINT_URL_S3: endpoint, S3_FORCE_PATH_STYLE: 'true', FILES_BUCKET: bucket },
    urls: { 'S3 (s3rver)': endpoint },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await server.close();
    },
  };
}
