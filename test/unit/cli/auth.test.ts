import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bearerToken, credentialsPath } from '#cli/auth.js';
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
