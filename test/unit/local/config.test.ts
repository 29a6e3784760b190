import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseLocalConfig, publicHost, ROOT } from '#local/config.js';

describe('local stack settings', () => {
  it('has a default for every setting', () => {
    const c = parseLocalConfig({});
    expect(c).toMatchObject({
      HOST: '127.0.0.1',
      COORDINATOR_PORT: 3000,
      FILES_PORT: 3001,
      IDP_PORT: 3002,
      S3_PORT: 3003,
      SFN_PORT: 3004,
      DYNAMODB_PORT: 8000,
      DATA_DIR: resolve('.local'),
      LOCAL_METRICS_FILE: resolve('.local/metrics.log'),
      DYNAMODB_HEAP: '256m',
      TABLE_PREFIX: 'local',
      STUDIES_SOURCE: resolve(ROOT, 'local/studies.sample.json'),
      HEALTH_INTERVAL_SECONDS: 60,
      STUDY_SYNC_SECONDS: 3600,
      AUTH_AUDIENCE: 'release-coordinator',
      TASK_SERVICE_AUDIENCE: 'task-services',
      COORDINATOR_CLIENT_ID: 'coordinator',
      ADMIN_TOKEN_TTL_SECONDS: 86_400,
    });
    expect(c.IDP_ISSUER).toBeUndefined();
    // Unset: dev tokens only while the identity provider listens on loopback.
    expect(c.IDP_DEV_TOKENS).toBeUndefined();
  });

  it('reads overrides, makes paths absolute and keeps URL sources as they are', () => {
    const c = parseLocalConfig({
      COORDINATOR_PORT: '0',
      DATA_DIR: 'tmp/x',
      STUDIES_SOURCE: 'https://kf-api-dataservice.kidsfirstdrc.org',
      IDP_DEV_TOKENS: 'false',
    });
    expect(c.COORDINATOR_PORT).toBe(0);
    expect(c.DATA_DIR).toBe(resolve('tmp/x'));
    expect(c.LOCAL_METRICS_FILE).toBe(resolve('tmp/x/metrics.log'));
    expect(parseLocalConfig({ LOCAL_METRICS_FILE: 'm.log' }).LOCAL_METRICS_FILE).toBe(resolve('m.log'));
    expect(c.STUDIES_SOURCE).toBe('https://kf-api-dataservice.kidsfirstdrc.org');
    expect(c.IDP_DEV_TOKENS).toBe(false);
    expect(parseLocalConfig({ STUDIES_SOURCE: 'studies.json' }).STUDIES_SOURCE).toBe(resolve('studies.json'));
  });

  it('fails naming the variable when a value is malformed', () => {
    expect(() => parseLocalConfig({ IDP_PORT: '70000' })).toThrow(/IDP_PORT/);
    expect(() => parseLocalConfig({ DYNAMODB_HEAP: 'lots' })).toThrow(/DYNAMODB_HEAP/);
    expect(() => parseLocalConfig({ IDP_ISSUER: 'not a url' })).toThrow(/IDP_ISSUER/);
  });

  it('prints loopback for a wildcard bind address', () => {
    expect(publicHost('0.0.0.0')).toBe('127.0.0.1');
    expect(publicHost('::')).toBe('127.0.0.1');
    expect(publicHost('192.168.1.5')).toBe('192.168.1.5');
    expect(publicHost('::1')).toBe('[::1]');
  });
});
