import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bearerToken, credentialsPath } from '../../../cli/auth.js';
import { loadConfig, UsageError, writePrivateJson } from '../../../cli/config.js';
import { apiMessage, listPages, nextQuery } from '../../../cli/http.js';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'drc-unit-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('drc configuration', () => {
  it('defaults every URL to the local stack and the config dir to $XDG_CONFIG_HOME/drc', () => {
    const c = loadConfig({ XDG_CONFIG_HOME: '/x/config' });
    expect(c).toMatchObject({
      coordinatorUrl: 'http://127.0.0.1:3000',
      filesUrl: 'http://127.0.0.1:3001',
      idpUrl: 'http://127.0.0.1:3002',
      tokenUrl: 'http://127.0.0.1:3002/oauth/token',
      configDir: '/x/config/drc',
    });
  });

  it('takes DRC_* settings, trailing slashes removed', () => {
    const c = loadConfig({
      DRC_COORDINATOR_URL: 'https://api.example/',
      DRC_FILES_URL: 'https://files.example',
      DRC_TOKEN_URL: 'https://auth.example/oauth2/token',
      DRC_CONFIG_DIR: '/etc/drc',
      DRC_TOKEN: 'abc',
    });
    expect(c).toMatchObject({
      coordinatorUrl: 'https://api.example',
      filesUrl: 'https://files.example',
      tokenUrl: 'https://auth.example/oauth2/token',
      configDir: '/etc/drc',
      envToken: 'abc',
    });
  });

  it('refuses a URL that is not one, as a usage error naming the variable', () => {
    const err = (() => {
      try {
        loadConfig({ DRC_COORDINATOR_URL: 'not a url' });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).exitCode).toBe(2);
    expect((err as Error).message).toContain('DRC_COORDINATOR_URL');
  });
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

describe('drc answers', () => {
  it('quotes the API error message with its fields', () => {
    expect(
      apiMessage(400, {
        error: { code: 'invalid', message: 'Invalid request', fields: { name: ['Required'] } },
      }),
    ).toBe('Invalid request (name: Required)');
    expect(apiMessage(502, 'not json')).toBe('HTTP 502');
  });

  it('follows next links, cursor and filters included, for --all', async () => {
    const pages: Record<string, { count: number; next: string | null; previous: null; results: number[] }> = {
      first: {
        count: 3,
        next: 'http://x/events?release=RE_1&limit=2&cursor=c2',
        previous: null,
        results: [1, 2],
      },
      c2: { count: 3, next: null, previous: null, results: [3] },
    };
    const asked: Record<string, unknown>[] = [];
    const all = await listPages<number>(
      { release: 'RE_1', limit: 2 },
      async (q) => {
        asked.push(q);
        return pages[(q.cursor as string) ?? 'first'];
      },
      true,
    );
    expect(all.results).toEqual([1, 2, 3]);
    expect(asked[1]).toEqual({ release: 'RE_1', limit: '2', cursor: 'c2' });
    expect(nextQuery(null)).toBeUndefined();
  });
});
