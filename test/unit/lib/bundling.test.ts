import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { FUNCTION_BUNDLE_OPTIONS, NODE_BUILTINS_VIA_REQUIRE } from '#lib/bundling.js';

/**
 * lib/bundling.ts bundles the Node builtins functions import through process.getBuiltinModule, so that Node builds no
 * ES module facade for them at a cold start (node:http's facade loads undici). The bundle must still get the real
 * builtins, named imports, namespaces and `node:`-less specifiers alike.
 */
const ROOT = join(import.meta.dirname, '..', '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'bundling-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('Node builtins in function bundles', () => {
  it('has a shim for every builtin it routes', () => {
    for (const name of NODE_BUILTINS_VIA_REQUIRE) {
      const shim = join(ROOT, 'lib/bundling/node-builtins', `${name}.cjs`);
      expect(existsSync(shim), shim).toBe(true);
      expect(readFileSync(shim, 'utf8')).toContain(`process.getBuiltinModule('node:${name}')`);
    }
  });

  it('imports none of them as an ES module, and gets the real ones', () => {
    const entry = join(dir, 'entry.ts');
    writeFileSync(
      entry,
      [
        "import { Agent, request } from 'node:http';",
        "import * as https from 'https';",
        "import { readFile } from 'node:fs/promises';",
        "import { createHash } from 'crypto';",
        "import { Readable } from 'node:stream';",
        "import http from 'node:http';",
        "import { builtinModules, createRequire } from 'node:module';",
        'const real = createRequire(import.meta.url);',
        'process.stdout.write(JSON.stringify([',
        "  Agent === real('node:http').Agent, request === real('http').request, http === real('node:http'),",
        "  https.get === real('node:https').get, readFile === real('node:fs/promises').readFile,",
        "  createHash('sha256').update('x').digest('hex').length === 64, typeof Readable.from === 'function',",
        "  builtinModules.includes('http'),",
        ']));',
        '',
      ].join('\n'),
    );
    const out = join(dir, 'index.mjs');
    buildSync({ ...FUNCTION_BUNDLE_OPTIONS, absWorkingDir: ROOT, entryPoints: [entry], outfile: out });
    const code = readFileSync(out, 'utf8');
    for (const name of NODE_BUILTINS_VIA_REQUIRE)
      expect(code, name).not.toMatch(new RegExp(`(from|import)\\s*"(node:)?${name}"`));
    const run = spawnSync(process.execPath, [out], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual([true, true, true, true, true, true, true, true]);
  });
});
