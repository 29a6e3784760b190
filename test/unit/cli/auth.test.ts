import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bearerToken, credentialsPath, loginMethod } from '#cli/auth.js';
import { loadConfig, writePrivateJson } from '#cli/config.js';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'drc-unit-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('drc token choice', () => {
  it('prefers --token, then DRC_TOKEN, then the stored token while it is fresh', async () => {
    const configDir = tempDir();
    const now = Date.now();
    writePrivateJson(join(configDir, 'credentials.json'), {
      method: 'client_credentials',
      token_url: 'http://127.0.0.1:1/oauth/token',
      client_id: 'admin',
      client_secret: 's',
      access_token: 'stored',
      expires_at: now + 3_600_000,
    });
    const config = loadConfig({ DRC_CONFIG_DIR: configDir });
    expect(statSync(credentialsPath(config)).mode & 0o777).toBe(0o600);
    expect(await bearerToken(config, 'flag', now)).toBe('flag');
    expect(await bearerToken({ ...config, envToken: 'env' }, undefined, now)).toBe('env');
    expect(await bearerToken(config, undefined, now)).toBe('stored');
  });

  it('without a login says how to log in', async () => {
    const config = loadConfig({ DRC_CONFIG_DIR: tempDir() });
    await expect(bearerToken(config)).rejects.toThrow(/drc login/);
  });
});

describe('which login drc login makes', () => {
  const local = loadConfig({});
  const deployed = loadConfig({
    DRC_ISSUER: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc',
    DRC_CLIENT_ID: 'abc123',
  });

  it('a dev token by default on the local stack, a sign-in once the environment names the provider', () => {
    expect(loginMethod(local, {})).toBe('dev_token');
    expect(local.signIn).toEqual({
      issuer: 'http://127.0.0.1:3002',
      clientId: 'drc',
      scope: 'openid email profile',
      configured: false,
    });
    expect(loginMethod(deployed, {})).toBe('authorization_code');
    expect(deployed.signIn).toMatchObject({ clientId: 'abc123', configured: true });
  });

  it('a sign-in when asked for (--browser, --no-browser, a client id without a secret)', () => {
    expect(loginMethod(local, { browser: false })).toBe('authorization_code');
    expect(loginMethod(local, { browser: true })).toBe('authorization_code');
    expect(loginMethod(local, { clientId: 'drc' })).toBe('authorization_code');
  });

  it('client credentials with a secret, a dev token with its options, whatever the environment says', () => {
    expect(loginMethod(deployed, { clientId: 'admin', clientSecret: 's' })).toBe('client_credentials');
    expect(loginMethod(deployed, { sub: 'me' })).toBe('dev_token');
    expect(() => loginMethod(local, { clientSecret: 's' })).toThrow(
      /--client-id and --client-secret go together/,
    );
    expect(() => loginMethod(local, { sub: 'me', browser: false })).toThrow(
      /make a dev token, not a sign-in/,
    );
  });
});
