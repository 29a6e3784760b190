import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * What a fresh clone's `npm ci` and first `npx drc` print: no warning the README does not explain.
 *
 * @covers package.json
 */
const ROOT = resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

/** Every installed package (nested node_modules and scopes included) with its package.json. */
function installed(dir = join(ROOT, 'node_modules'), out: { name: string; json: any }[] = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.name.startsWith('@')) {
      installed(path, out);
      continue;
    }
    const file = join(path, 'package.json');
    if (existsSync(file)) out.push({ name: entry.name, json: JSON.parse(readFileSync(file, 'utf8')) });
    if (existsSync(join(path, 'node_modules'))) installed(join(path, 'node_modules'), out);
  }
  return out;
}

describe('npm ci', () => {
  it('meets no install script that allowScripts leaves undecided (npm warns of each)', () => {
    const withScripts = installed()
      .filter(
        ({ json }) =>
          ['preinstall', 'install', 'postinstall'].some((s) => json.scripts?.[s]) || json.gypfile === true,
      )
      .map(({ json }) => json.name as string);
    expect(withScripts).toContain('core-js');
    const undecided = [...new Set(withScripts)].filter((name) => !(name in pkg.allowScripts));
    expect(undecided).toEqual([]);
    // core-js's postinstall only prints a request for donations (README, Quickstart).
    expect(pkg.allowScripts['core-js']).toBe(false);
  });
});

describe('npx drc', () => {
  it("prints no npm warning on the machine's own Node, the first time in a clone", async () => {
    // A reader's terminal: npx on the machine's Node (no node_modules/.bin on PATH), and an npm cache of its own, so
    // npx sets the project up in it as in a fresh clone (where npm checks package.json's engines).
    const cache = mkdtempSync(join(tmpdir(), 'npx-cache-'));
    const PATH = (process.env.PATH ?? '')
      .split(delimiter)
      .filter((p) => !p.split(/[\\/]/).includes('node_modules'))
      .join(delimiter);
    try {
      const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
        const child = spawn('npx', ['drc', '--help'], {
          cwd: ROOT,
          env: { HOME: process.env.HOME ?? cache, PATH, npm_config_cache: cache },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => {
          stdout += d.toString();
        });
        child.stderr.on('data', (d: Buffer) => {
          stderr += d.toString();
        });
        child.once('close', (code) => done({ code, stdout, stderr }));
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('Usage: drc');
      expect(r.stderr).not.toMatch(/npm warn|EBADENGINE/i);
      // The engines npm checks are those of the Node running npm, which the README asks to be 20 or later.
      expect(pkg.engines.node).toBe('>=20');
      expect(pkg.devDependencies.node).toMatch(/^22\./);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  }, 60_000);
});
