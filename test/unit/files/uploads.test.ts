import { describe, expect, it } from 'vitest';
import { filesConfigFromEnv } from '#functions/files/config.js';
import { uploadPlan } from '#functions/files/uploads.js';

const MiB = 1024 * 1024;
const baseEnv = { FILES_TABLE: 'files', STUDIES_TABLE: 'studies', FILES_BUCKET: 'bucket' };
const config = filesConfigFromEnv(baseEnv);

describe('upload plans', () => {
  it('use one PUT up to the threshold and parts above it, never more than 10,000', () => {
    expect(uploadPlan(100 * MiB, config)).toBeNull();
    expect(uploadPlan(100 * MiB + 1, config)).toEqual({ partSize: 64 * MiB, partCount: 2 });
    const huge = uploadPlan(5 * 1024 * 1024 * MiB, config)!;
    expect(huge.partCount).toBeLessThanOrEqual(10_000);
    expect(huge.partSize % MiB).toBe(0);
  });
});
