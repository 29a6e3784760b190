import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { settingsFromEnv } from '#packages/task-service/src/env.js';

/** The settings a kit service takes from its environment, with the local stack's defaults. */
describe('settingsFromEnv', () => {
  it('defaults to the local stack: port 4000, jwks at the local identity provider, audience task-services', () => {
    const s = settingsFromEnv({});
    expect(s.listen).toEqual({ port: 4000, host: '127.0.0.1' });
    expect(s.options.auth).toMatchObject({
      mode: 'jwks',
      issuer: 'http://127.0.0.1:3002',
      audience: ['task-services'],
      scope: 'task-services/invoke',
    });
    expect(s.options.signingSecrets).toBeUndefined();
    expect(s.options.callbackToken).toBeUndefined();
    expect(s.notes.join('\n')).toMatch(/signatures are not checked/);
    expect(s.notes.join('\n')).toMatch(/tasks are kept in memory/);
  });

  it('reads every setting by its name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kit-env-'));
    const s = settingsFromEnv({
      PORT: '4100',
      HOST: '0.0.0.0',
      SERVICE_NAME: 'indexer',
      SERVICE_VERSION: '3.1.0',
      COORDINATOR_URL: 'http://127.0.0.1:3000',
      AUTH_ISSUER: 'https://cognito-idp.us-east-1.amazonaws.com/pool',
      AUTH_JWKS_URI: 'https://idp.test/jwks',
      AUTH_AUDIENCE: 'a, b',
      AUTH_CLIENT_ID: 'coordinator-client',
      AUTH_REQUIRED_ROLE: 'service',
      WEBHOOK_SECRET: 'whsec_x',
      TOKEN_URL: 'http://127.0.0.1:3002/oauth/token',
      CLIENT_ID: 'indexer',
      CLIENT_SECRET: 's',
      TASK_STORE_FILE: join(dir, 'tasks.json'),
    });
    expect(s.listen).toEqual({ port: 4100, host: '0.0.0.0' });
    expect(s.options).toMatchObject({
      name: 'indexer',
      version: '3.1.0',
      coordinatorUrl: 'http://127.0.0.1:3000',
    });
    expect(s.options.auth).toEqual({
      mode: 'jwks',
      issuer: 'https://cognito-idp.us-east-1.amazonaws.com/pool',
      jwksUri: 'https://idp.test/jwks',
      audience: ['a', 'b'],
      scope: 'task-services/invoke',
      clientIds: ['coordinator-client'],
      requiredRole: 'service',
    });
    expect(s.options.signingSecrets?.()).toEqual(['whsec_x']);
    expect(typeof s.options.callbackToken).toBe('function');
    expect(s.notes).toEqual([]);
  });

  it('takes AUTH_MODE verify (AUTH_URL) and none, and a fixed CALLBACK_TOKEN', async () => {
    expect(settingsFromEnv({ AUTH_MODE: 'verify', AUTH_URL: 'http://idp.test' }).options.auth).toMatchObject({
      mode: 'verify',
      authUrl: 'http://idp.test',
    });
    expect(settingsFromEnv({ AUTH_MODE: 'none' }).options.auth).toEqual({ mode: 'none' });
    expect(await settingsFromEnv({ CALLBACK_TOKEN: 'fixed' }).options.callbackToken?.()).toBe('fixed');
  });

  it('refuses invalid settings, naming them', () => {
    expect(() => settingsFromEnv({ PORT: 'x' })).toThrow(/PORT/);
    expect(() => settingsFromEnv({ AUTH_MODE: 'maybe' })).toThrow(/AUTH_MODE/);
    expect(() => settingsFromEnv({ TASK_STORE: 'file' })).toThrow(/TASK_STORE_FILE/);
    expect(() => settingsFromEnv({ TASK_STORE: 'dynamodb' })).toThrow(/TASK_TABLE/);
  });
});
