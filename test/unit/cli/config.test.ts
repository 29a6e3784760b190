import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, UsageError } from '#cli/config.js';

const dirs: string[] = [];
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
