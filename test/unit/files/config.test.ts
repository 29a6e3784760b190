import { describe, expect, it } from 'vitest';
import { filesConfigFromEnv } from '#functions/files/config.js';

const MiB = 1024 * 1024;
const baseEnv = { FILES_TABLE: 'files', STUDIES_TABLE: 'studies', FILES_BUCKET: 'bucket' };
const config = filesConfigFromEnv(baseEnv);

describe('configuration', () => {
  it('defaults to 30 s signed-URL tokens, S3 redirects of 5 minutes plus one per 500 MB up to an hour, and multipart above 100 MiB', () => {
    expect(config).toMatchObject({
      SIGNED_URL_TTL_SECONDS: 30,
      DOWNLOAD_URL_BASE_SECONDS: 300,
      DOWNLOAD_URL_BYTES_PER_MINUTE: 500_000_000,
      DOWNLOAD_URL_MAX_SECONDS: 3600,
      MULTIPART_THRESHOLD_BYTES: 100 * MiB,
      DIRECT_DOWNLOAD_MAX_BYTES: MiB,
    });
  });

  it('refuses a token lifetime over 300 s, a redirect cap over 12 hours, and names a missing bucket', () => {
    expect(() => filesConfigFromEnv({ ...baseEnv, SIGNED_URL_TTL_SECONDS: '301' })).toThrow(
      'SIGNED_URL_TTL_SECONDS',
    );
    expect(filesConfigFromEnv({ ...baseEnv, SIGNED_URL_TTL_SECONDS: '300' }).SIGNED_URL_TTL_SECONDS).toBe(
      300,
    );
    expect(() => filesConfigFromEnv({ ...baseEnv, DOWNLOAD_URL_MAX_SECONDS: '43201' })).toThrow(
      'DOWNLOAD_URL_MAX_SECONDS',
    );
    expect(
      filesConfigFromEnv({ ...baseEnv, DOWNLOAD_URL_MAX_SECONDS: '43200' }).DOWNLOAD_URL_MAX_SECONDS,
    ).toBe(43_200);
    expect(() => filesConfigFromEnv({ FILES_TABLE: 'files', STUDIES_TABLE: 'studies' })).toThrow(
      'FILES_BUCKET',
    );
  });
});
