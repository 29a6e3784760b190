import { describe, expect, it } from 'vitest';
import { s3Class } from '#local/meter/s3-class.js';

describe('the meter classes S3 requests as S3 prices them', () => {
  it('puts uploads, copies and listings in the first class and reads in the second', () => {
    const c = (method: string, url: string, headers: Record<string, string> = {}) =>
      s3Class({ method, url, headers }).tier;
    expect(c('PUT', '/bucket/key')).toBe('tier1');
    expect(c('PUT', '/bucket/key', { 'x-amz-copy-source': '/bucket/other' })).toBe('tier1');
    expect(c('POST', '/bucket/key?uploads')).toBe('tier1');
    expect(c('GET', '/bucket?list-type=2')).toBe('tier1');
    expect(c('GET', '/bucket/key')).toBe('tier2');
    expect(c('HEAD', '/bucket/key')).toBe('tier2');
    expect(c('DELETE', '/bucket/key')).toBe('free');
  });
});
