import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * `npm run docs:kit` builds the task-service kit's reference with typedoc, and fails on an export without TSDoc, an
 * export without an `@example`, and a referenced type that is not exported. The kit's own entry point must pass;
 * a fixture that breaks each rule once (test/fixtures/kit-docs) must fail, naming each.
 *
 * @covers bin/docs-kit.ts
 */
const ROOT = resolve(import.meta.dirname, '../../..');
const out = mkdtempSync(join(tmpdir(), 'kit-docs-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

function docsKit(...args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'bin/docs-kit.ts', ...args],
      { cwd: ROOT, timeout: 240_000, env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' } },
      (err, stdout, stderr) =>
        done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

describe('the kit’s reference (npm run docs:kit)', () => {
  let kit: { code: number; output: string };
  let broken: { code: number; output: string };
  beforeAll(async () => {
    const fixture = join(ROOT, 'test/fixtures/kit-docs');
    // Both at once: each spends most of its time reading the program.
    [kit, broken] = await Promise.all([
      docsKit('--out', join(out, 'kit')),
      docsKit(
        '--entry',
        join(fixture, 'index.ts'),
        '--tsconfig',
        join(fixture, 'tsconfig.json'),
        '--out',
        join(out, 'broken'),
      ),
    ]);
  }, 240_000);

  it('builds from the kit’s entry points (the kit, and its CDK construct) with no warning, every export documented with an example', () => {
    expect(kit.output).not.toMatch(/\[(warning|error)\]/);
    expect(kit.code).toBe(0);
    expect(existsSync(join(out, 'kit/index.html'))).toBe(true);
    expect(existsSync(join(out, 'kit/functions/index.createTaskService.html'))).toBe(true);
    expect(existsSync(join(out, 'kit/classes/cdk.TaskServiceConstruct.html'))).toBe(true);
  });

  it('fails on an undocumented export, one without an example, and a type that is not exported', () => {
    expect(broken.code).not.toBe(0);
    expect(broken.output).toMatch(/UNDOCUMENTED \(Variable\), .* does not have any documentation/);
    expect(broken.output).toMatch(/Variable NO_EXAMPLE has no @example/);
    expect(broken.output).toMatch(/HiddenOptions, .* is referenced by shout\.options but not included/);
    expect(broken.output).not.toMatch(/greet/);
    expect(existsSync(join(out, 'broken/index.html'))).toBe(false);
  });
});
