/** @covers bin/pack-cli.ts */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { machineNode, REPO_ROOT } from '#bin/build-cli.js';

/**
 * `npm run pack:cli`: its last line is the tarball's path relative to the repository root, and that tarball installs
 * with the machine's npm (`npm install -g`, no registry needed: nothing to fetch) into a drc that runs anywhere, and
 * that `npx` runs without installing it.
 */
const run = promisify(execFile);
const work = mkdtempSync(join(tmpdir(), 'pack-cli-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('npm run pack:cli', () => {
  it('packs a tarball, names it last, and npm install -g of it gives a drc that runs from any folder, as does npx of it', async () => {
    const out = await run(
      join(REPO_ROOT, 'node_modules/.bin/tsx'),
      ['bin/pack-cli.ts', join(work, 'packs')],
      {
        cwd: REPO_ROOT,
      },
    );
    const last = out.stdout.trim().split('\n').at(-1) ?? '';
    const tarball = resolve(REPO_ROOT, last);
    expect(last).not.toMatch(/^\//);
    expect(existsSync(tarball)).toBe(true);

    const node = machineNode();
    const npm = join(dirname(node), 'npm');
    const env = {
      PATH: `${dirname(node)}:/usr/bin:/bin`,
      HOME: work,
      npm_config_cache: join(work, 'npm-cache'),
    };
    await run(
      npm,
      ['install', '-g', '--prefix', join(work, 'global'), '--no-audit', '--no-fund', '--offline', tarball],
      {
        cwd: work,
        env,
      },
    );
    const drc = await run(join(work, 'global/bin/drc'), ['token', '--token', 'installed'], {
      cwd: work,
      env: { ...env, DRC_CONFIG_DIR: join(work, 'config') },
    });
    expect(drc.stdout).toBe('installed\n');

    // Or without installing: npx of the tarball (npx wants ./ before a relative path), from its folder.
    const npx = await run(
      join(dirname(node), 'npx'),
      ['--yes', '--offline', `./${basename(tarball)}`, 'token', '--token', 'through-npx'],
      { cwd: dirname(tarball), env: { ...env, DRC_CONFIG_DIR: join(work, 'config') } },
    );
    expect(npx.stdout).toBe('through-npx\n');
  }, 180_000);
});
