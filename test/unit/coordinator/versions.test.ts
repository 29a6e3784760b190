import { describe, expect, it } from 'vitest';
import {
  compareVersions,
  provisionalVersion,
  publishedVersion,
  versionSortKey,
} from '#functions/coordinator/versions.js';

describe('versions', () => {
  it('starts at 0.0.1 and gives the next patch after the highest published version', () => {
    expect(provisionalVersion(null)).toBe('0.0.1');
    expect(provisionalVersion('0.2.0')).toBe('0.2.1');
  });
  it('publishes as the next minor, or the next major when is_major', () => {
    expect(publishedVersion(null, false)).toBe('0.1.0');
    expect(publishedVersion('1.4.2', false)).toBe('1.5.0');
    expect(publishedVersion('1.4.2', true)).toBe('2.0.0');
  });
  it('sorts numerically, also as a DynamoDB sort key', () => {
    expect(compareVersions('0.10.0', '0.9.9')).toBeGreaterThan(0);
    expect(versionSortKey('0.10.0') > versionSortKey('0.9.9')).toBe(true);
    expect(() => versionSortKey('1.2')).toThrow();
  });
});
