/** @covers packages/task-service/package.json */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * packages/task-service is publishable: its build (tsc, tsconfig.build.json) writes every file its `exports` name,
 * the built entry point loads in plain Node, and it depends only on packages the repository already pins, at the
 * same versions.
 */
const ROOT = resolve(import.meta.dirname, '../../../..');
const DIR = join(ROOT, 'packages/task-service');
const pkg = JSON.parse(readFileSync(join(DIR, 'package.json'), 'utf8'));
const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

describe('the task-service package', () => {
  it('builds every file its exports name, and the built entry point loads', async () => {
    const out = mkdtempSync(join(tmpdir(), 'kit-build-'));
    await promisify(execFile)(
      join(ROOT, 'node_modules/.bin/tsc'),
      ['-p', 'tsconfig.build.json', '--outDir', out],
      {
        cwd: DIR,
      },
    );
    for (const entry of Object.values(pkg.exports) as { types: string; default: string; source: string }[]) {
      for (const file of [entry.types, entry.default])
        expect(existsSync(join(out, file.replace(/^\.\/dist\//, ''))), file).toBe(true);
      // The `source` condition (a clone's install, run with tsx --conditions=source) names the TypeScript itself.
      expect(existsSync(join(DIR, entry.source)), entry.source).toBe(true);
    }
    const built = await import(join(out, 'index.js'));
    expect(typeof built.runTaskService).toBe('function');
    expect(built.TASK_ACTIONS).toEqual(['initialize', 'start', 'get_status', 'publish', 'cancel']);
  }, 60_000);

  it('depends only on what the repository pins, at the same versions', () => {
    for (const [name, version] of Object.entries(pkg.dependencies))
      expect(root.dependencies[name], name).toBe(version);
    expect(pkg.name).toBe('@release-coordinator/task-service');
    expect(pkg.private).toBeUndefined();
  });
});
