import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm run pack:kit` makes the kit's npm tarball: compiled JavaScript with its types for every entry point of its
 * `exports`, its source, no build step left to run where it is installed, and nothing written into the clone.
 *
 * @covers bin/pack-kit.ts
 */
const ROOT = resolve(import.meta.dirname, '../../..');
const out = mkdtempSync(join(tmpdir(), 'pack-kit-test-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('npm run pack:kit', () => {
  it('packs the kit compiled, with types, into the folder asked for', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'bin/pack-kit.ts', '--out', out],
      { cwd: ROOT, timeout: 120_000 },
    );
    const tarball = stdout.trim();
    expect(tarball).toBe(join(out, 'release-coordinator-task-service-0.1.0.tgz'));
    expect(readdirSync(out)).toEqual(['release-coordinator-task-service-0.1.0.tgz']);
    const { stdout: list } = await promisify(execFile)('tar', ['-tzf', tarball]);
    const files = list.trim().split('\n');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'packages/task-service/package.json'), 'utf8'));
    for (const entry of Object.values(pkg.exports) as { types: string; default: string; source: string }[])
      for (const file of [entry.types, entry.default, entry.source])
        expect(files, file).toContain(`package/${file.replace(/^\.\//, '')}`);
    const { stdout: manifest } = await promisify(execFile)('tar', ['-xzOf', tarball, 'package/package.json']);
    const packed = JSON.parse(manifest);
    expect(packed.scripts).toBeUndefined();
    expect(packed.dependencies).toEqual(pkg.dependencies);
    expect(packed.engines).toEqual({ node: '>=20' });
  }, 120_000);
});
