import { describe, expect, it } from 'vitest';
import { filesConfigFromEnv } from '#functions/files/config.js';

const MiB = 1024 * 1024;
const baseEnv = { FILES_TABLE: 'files', STUDIES_TABLE: 'studies', FILES_BUCKET: 'bucket' };
const config = filesConfigFromEnv(baseEnv);

describe('configuration', () => {
  it('defaults to 30 s signed-URL tokens, 60 s S3 redirects and multipart above 100 MiB', () => {
    expect(config).toMatchObject({
      SIGNED_URL_TTL_SECONDS: 30,
      DOWNLOAD_URL_TTL_SECONDS: 60,
      MULTIPART_THRESHOLD_BYTES: 100 * MiB,
      DIRECT_DOWNLOAD_MAX_BYTES: MiB,
    });
  });

  it('refuses a token lifetime over 300 s, a redirect over 60 s, and names a missing bucket', () => {
    expect(() => filesConfigFromEnv({ ...baseEnv, SIGNED_URL_TTL_SECONDS: '301' })).toThrow(
      'SIGNED_URL_TTL_SECONDS',
    );
    expect(filesConfigFromEnv({ ...baseEnv, SIGNED_URL_TTL_SECONDS: '300' }).SIGNED_URL_TTL_SECONDS).toBe(
      300,
    );
    expect(() => filesConfigFromEnv({ ...baseEnv, DOWNLOAD_URL_TTL_SECONDS: '61' })).toThrow(
      'DOWNLOAD_URL_TTL_SECONDS',
    );
    expect(() => filesConfigFromEnv({ FILES_TABLE: 'files', STUDIES_TABLE: 'studies' })).toThrow(
      'FILES_BUCKET',
    );
  });
});
