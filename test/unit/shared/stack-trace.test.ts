import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readableStack } from '#functions/shared/stack-trace.js';
import { FUNCTION_BUNDLE_OPTIONS } from '#lib/bundling.js';

/**
 * Deployed functions run without --enable-source-maps; functions/shared/stack-trace.ts maps a logged error's frames
 * through the bundle's own source map. Built here the way lib/bundling.ts builds a function, and run in a fresh Node
 * process with no source-map flag, as Lambda runs it.
 */
const ROOT = join(import.meta.dirname, '..', '..', '..');
let dir: string;
let bundle: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'stack-trace-'));
  const entry = join(dir, 'entry.ts');
  writeFileSync(
    entry,
    [
      `import { readableStack } from ${JSON.stringify(join(ROOT, 'functions/shared/stack-trace.ts'))};`,
      'function failHere(): never {',
      "  throw new Error('boom');",
      '}',
      'try { failHere(); } catch (err) { process.stdout.write(JSON.stringify({ mapped: readableStack(err), raw: (err as Error).stack })); }',
      '',
    ].join('\n'),
  );
  bundle = join(dir, 'out', 'index.mjs');
  buildSync({ ...FUNCTION_BUNDLE_OPTIONS, absWorkingDir: ROOT, entryPoints: [entry], outfile: bundle });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(nodeOptions: string) {
  const out = spawnSync(process.execPath, [bundle], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, NODE_OPTIONS: nodeOptions },
  });
  expect(out.status, out.stderr).toBe(0);
  return JSON.parse(out.stdout) as { mapped: string; raw: string };
}

describe('readableStack', () => {
  it("names the TypeScript source and line of a bundle's frames, without --enable-source-maps", () => {
    const { mapped, raw } = run('');
    expect(raw).toContain('index.mjs:');
    // Function names stay minified (as with Node's own mapping of a minified bundle); files and lines are the source's.
    expect(mapped).toMatch(/\n {4}at \S+ \(\S*entry\.ts:3:\d+\)\n {4}at \S*entry\.ts:5:\d+\n/);
    expect(mapped).not.toContain('index.mjs:');
    expect(mapped.split('\n')[0]).toBe('Error: boom');
  });

  it('leaves the stack alone where Node maps it already', () => {
    const { mapped, raw } = run('--enable-source-maps');
    expect(mapped).toBe(raw);
    expect(raw).toContain('entry.ts:3');
  });

  it('has no map to read in source mode and passes the stack through; non-errors pass through too', () => {
    const err = new Error('from source');
    expect(readableStack(err)).toBe(err.stack);
    expect(readableStack('a string')).toBe('a string');
    expect(readableStack(undefined)).toBeUndefined();
  });

  it('ships a source map next to the bundle, which it reads', () => {
    expect(
      JSON.parse(readFileSync(`${bundle}.map`, 'utf8')).sources.some((s: string) => s.endsWith('entry.ts')),
    ).toBe(true);
  });
});
