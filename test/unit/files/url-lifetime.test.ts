import { describe, expect, it } from 'vitest';
import { filesConfigFromEnv } from '#functions/files/config.js';
import { downloadUrlSeconds } from '#functions/files/url-lifetime.js';

const config = filesConfigFromEnv({ FILES_TABLE: 'files', STUDIES_TABLE: 'studies', FILES_BUCKET: 'bucket' });
const MB = 1_000_000;

describe('the lifetime of a presigned download URL', () => {
  it('is 5 minutes plus a minute for each 500 MB begun', () => {
    expect(downloadUrlSeconds(0, config)).toBe(300);
    expect(downloadUrlSeconds(1, config)).toBe(360);
    expect(downloadUrlSeconds(500 * MB, config)).toBe(360);
    expect(downloadUrlSeconds(500 * MB + 1, config)).toBe(420);
    // 1.5 GB: 8 minutes, time to fetch it at 500 MB a minute and to resume it once.
    expect(downloadUrlSeconds(1500 * MB, config)).toBe(480);
  });

  it('stops at DOWNLOAD_URL_MAX_SECONDS, an hour by default (about 27.5 GB)', () => {
    expect(downloadUrlSeconds(27_500 * MB, config)).toBe(3600);
    expect(downloadUrlSeconds(5 * 1024 ** 4, config)).toBe(3600);
    const longer = { ...config, DOWNLOAD_URL_MAX_SECONDS: 43_200 };
    expect(downloadUrlSeconds(100_000 * MB, longer)).toBe(300 + 200 * 60);
  });
});
