import { copyFileSync, existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * The `drc` package, staged for packing: packages/drc (its package.json and README) with dist/bin/drc.mjs, bin/cli.ts
 * and everything it imports (cli/, clients/, the packages drc uses) bundled by esbuild into one ES module for Node 20
 * and later, so the package installs with no dependencies and starts by reading one file. The check of a task
 * service reads the task-service API's document beside it (openapi/task-service.json, at the path
 * cli/task-service-check/contract.ts names relative to itself). Nothing is written into the repository: the stage is
 * a temporary directory. `npm run pack:cli` (bin/pack-cli.ts) packs it.
 */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const PACKAGE_DIR = join(REPO_ROOT, 'packages/drc');
/** The bundle, two levels down, so that `../../openapi/…` from it is the package's own openapi/ folder. */
export const BUNDLE = 'dist/bin/drc.mjs';

/** Runs first: the package promises Node 20, and CommonJS dependencies inside an ES module need a `require`. */
const BANNER = `#!/usr/bin/env node
import { createRequire as __drcCreateRequire } from 'node:module';
const require = __drcCreateRequire(import.meta.url);
if (Number(process.versions.node.split('.')[0]) < 20) {
  process.stderr.write('drc: needs Node 20 or later; this is Node ' + process.versions.node + '\\n');
  process.exit(1);
}`;

/** Stages the package in `stage` (default: a new temporary directory) and answers where, and its bundle. */
export async function buildCli(stage?: string): Promise<{ stage: string; bundle: string }> {
  const dir = stage ?? mkdtempSync(join(tmpdir(), 'drc-package-'));
  for (const file of ['package.json', 'README.md']) copyFileSync(join(PACKAGE_DIR, file), join(dir, file));
  const bundle = join(dir, BUNDLE);
  await build({
    entryPoints: [join(REPO_ROOT, 'bin/cli.ts')],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    minify: true,
    legalComments: 'eof',
    banner: { js: BANNER },
    logLevel: 'warning',
  });
  mkdirSync(join(dir, 'openapi'), { recursive: true });
  copyFileSync(join(REPO_ROOT, 'openapi/task-service.json'), join(dir, 'openapi/task-service.json'));
  return { stage: dir, bundle };
}

/**
 * The machine's own `node` (the first on PATH outside node_modules, or DRC_NODE): the Node the package is for, as
 * opposed to the project's Node 22 that npm scripts put first on PATH. The bench and the tests run the package on it.
 */
export function machineNode(env: NodeJS.ProcessEnv = process.env): string {
  if (env.DRC_NODE) return env.DRC_NODE;
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, 'node');
    if (!dir.split(/[\\/]/).includes('node_modules') && existsSync(candidate)) return candidate;
  }
  throw new Error('no node outside node_modules on PATH: set DRC_NODE');
}
