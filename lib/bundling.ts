import { createHash } from 'node:crypto';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BuildOptions, buildSync, type Metafile } from 'esbuild';
import { COORDINATOR_API, FILES_API } from './api-manifest.js';
import { AUTH_FUNCTIONS } from './auth-manifest.js';
import { DEPLOY_FUNCTIONS, FILES_WORKERS, WORKER_FUNCTIONS } from './orchestration-manifest.js';

/**
 * How a Lambda function is bundled: the one definition that CDK (lib/service-function.ts), `npm run
 * build:functions` (bin/build-functions.ts), the local stack's bundle mode (LOCAL_HANDLERS=bundled) and
 * `npm run bench:cold` all use, so what the tests run is byte for byte what deploys.
 */

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Node builtins that functions import, bundled through require (see NODE_BUILTIN_ALIASES). */
export const NODE_BUILTINS_VIA_REQUIRE = [
  'async_hooks',
  'console',
  'crypto',
  'dns/promises',
  'fs',
  'fs/promises',
  'http',
  'https',
  'os',
  'path',
  'process',
  'stream',
  'zlib',
] as const;

/**
 * Why: Node answers `import ... from 'node:http'` with an ES module facade that reads every export of the builtin,
 * and node:http's exports include lazy getters that load undici (about 30 ms of a cold start); node:fs's load its
 * streams. Each builtin above is bundled as lib/bundling/node-builtins/<name>.cjs, which returns the CommonJS
 * module from process.getBuiltinModule (Node >= 22.3): the same object, with no facade. `npm run
 * bench:cold` measures the difference (docs/benchmarks.md).
 */
const NODE_BUILTIN_ALIASES = Object.fromEntries(
  NODE_BUILTINS_VIA_REQUIRE.flatMap((name) => {
    const shim = `./lib/bundling/node-builtins/${name}.cjs`;
    return [
      [name, shim],
      [`node:${name}`, shim],
    ];
  }),
);

/**
 * esbuild options for every function: minified ESM for nodejs22.x with a source map, the AWS SDK bundled (Lambda
 * runs the exact SDK versions the tests ran). Nothing in functions/ depends on class or function names surviving
 * minification (errors carry a stable `code` and literal `name`s), so `keepNames` stays off.
 *
 * The SDK's default credential chain is replaced by a function's own (environment, then the container endpoint:
 * functions/adapters/lambda-credentials.ts); the rest of the chain (profiles, SSO, web identity, processes, instance
 * metadata) never applies to a function, and importing it costs every function cold-start time for nothing.
 */
export const FUNCTION_BUNDLE_OPTIONS = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  minify: true,
  sourcemap: true,
  sourcesContent: false,
  logLevel: 'warning',
  mainFields: ['module', 'main'],
  alias: {
    '@aws-sdk/credential-provider-node': './functions/adapters/lambda-credentials.ts',
    ...NODE_BUILTIN_ALIASES,
  },
  // CommonJS dependencies inside an ESM bundle still call require().
  banner: {
    js: "const require = process.getBuiltinModule('node:module').createRequire(import.meta.url);",
  },
} as const satisfies BuildOptions;

/** The bundle's file name inside its directory; the Lambda handler is `index.handler`. */
export const BUNDLE_FILE = 'index.mjs';
export const BUNDLE_HANDLER = 'index.handler';

/** Where `npm run build:functions` writes the bundles (one directory per entry). */
export const BUNDLES_DIR = join(REPO_ROOT, 'dist', 'functions');

export interface FunctionEntry {
  /** Handler module relative to the repository root, e.g. functions/coordinator/handlers/health.ts. */
  entry: string;
  /** The manifest names (CDK construct ids) deployed from this entry, e.g. Health and FilesHealth. */
  names: string[];
}

/** Every function entry of lib/api-manifest.ts and lib/orchestration-manifest.ts, once each, in manifest order. */
export function functionEntries(): FunctionEntry[] {
  const byEntry = new Map<string, string[]>();
  for (const fn of [
    ...COORDINATOR_API,
    ...WORKER_FUNCTIONS,
    ...FILES_API,
    ...FILES_WORKERS,
    ...DEPLOY_FUNCTIONS,
    ...AUTH_FUNCTIONS,
  ]) {
    const names = byEntry.get(fn.entry) ?? [];
    names.push(fn.name);
    byEntry.set(fn.entry, names);
  }
  return [...byEntry].map(([entry, names]) => ({ entry, names }));
}

/**
 * Package files an entry reads at run time rather than bundling (lib/api-manifest.ts `shipped`: the docs page's
 * Redoc script). They are copied to node_modules/ beside index.mjs, where Node's package resolution finds them as it
 * finds the repository's own node_modules when the sources run.
 */
export function shippedFilesOf(entry: string): string[] {
  return [
    ...new Set(
      [...COORDINATOR_API, ...FILES_API].filter((fn) => fn.entry === entry).flatMap((fn) => fn.shipped ?? []),
    ),
  ];
}

/** The directory of an entry's bundle: functions/coordinator/handlers/health.ts -> dist/functions/coordinator/handlers/health. */
export function bundleDirOf(entry: string, root = BUNDLES_DIR): string {
  const rel = entry.replace(/^functions\//, '').replace(/\.ts$/, '');
  return join(root, rel);
}

export interface BundleResult {
  /** Absolute path of the written index.mjs. */
  file: string;
  metafile?: Metafile;
}

/**
 * Bundles one entry into `outDir` (index.mjs + index.mjs.map), synchronously, because CDK's local bundling hook is
 * synchronous. The output depends only on the entry and FUNCTION_BUNDLE_OPTIONS, not on where it is written.
 */
export function bundleFunction(
  entry: string,
  outDir: string,
  opts: { metafile?: boolean } = {},
): BundleResult {
  mkdirSync(outDir, { recursive: true });
  for (const shipped of shippedFilesOf(entry)) {
    const to = join(outDir, 'node_modules', shipped);
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(join(REPO_ROOT, 'node_modules', shipped), to);
  }
  const file = join(outDir, BUNDLE_FILE);
  const result = buildSync({
    ...FUNCTION_BUNDLE_OPTIONS,
    absWorkingDir: REPO_ROOT,
    entryPoints: [join(REPO_ROOT, entry)],
    outfile: file,
    metafile: opts.metafile ?? false,
  });
  return { file, metafile: result.metafile };
}

/**
 * Bundles every function entry under `root` (default dist/functions), replacing what was there, unless `root`
 * already holds the bundles of exactly these inputs: then it is kept as it is (`reused: true`). What decides is
 * `root`/INPUTS_FILE, written after a build: every file esbuild read (sources and node_modules alike, from its
 * metafile) with the SHA-256 of its content, and the bundling options. So a second `npm start` in bundled mode, or
 * every stack a test run spawns after the run's own build, starts without rebuilding, and any change to any input
 * rebuilds. A caller that asks for metafiles always gets a fresh build.
 */
export function bundleAll(root = BUNDLES_DIR, opts: { metafile?: boolean } = {}) {
  const entries = functionEntries();
  const placed = (fn: FunctionEntry) => ({ ...fn, dir: bundleDirOf(fn.entry, root) });
  if (!opts.metafile && builtFromSameInputs(root, entries))
    return entries.map((fn) => ({
      ...placed(fn),
      file: join(bundleDirOf(fn.entry, root), BUNDLE_FILE),
      reused: true,
    }));
  // Built beside `root` and moved into place, so a reader never meets a half-written directory.
  const partial = `${root}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  const built = entries.map((fn) => ({
    ...fn,
    ...bundleFunction(fn.entry, bundleDirOf(fn.entry, partial), { metafile: true }),
  }));
  writeFileSync(join(partial, INPUTS_FILE), JSON.stringify(inputsRecord(entries, built)));
  rmSync(root, { recursive: true, force: true });
  renameSync(partial, root);
  return built.map((b) => ({
    ...placed(b),
    file: join(bundleDirOf(b.entry, root), BUNDLE_FILE),
    metafile: opts.metafile ? b.metafile : undefined,
    reused: false,
  }));
}

/** The record of what a bundle directory was built from (bundleAll). */
export const INPUTS_FILE = '.inputs.json';

interface InputsRecord {
  options: string;
  inputs: Record<string, string>;
}

const sha256Of = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

/** What a build depends on besides its input files: the options and the entries with their names. */
const optionsKey = (entries: FunctionEntry[]) => JSON.stringify({ FUNCTION_BUNDLE_OPTIONS, entries });

function inputsRecord(entries: FunctionEntry[], built: BundleResult[]): InputsRecord {
  const inputs: Record<string, string> = {};
  for (const b of built)
    for (const path of Object.keys(b.metafile?.inputs ?? {}))
      inputs[path] ??= sha256Of(join(REPO_ROOT, path));
  for (const entry of entries)
    for (const shipped of shippedFilesOf(entry.entry)) {
      const path = join('node_modules', shipped);
      inputs[path] ??= sha256Of(join(REPO_ROOT, path));
    }
  return { options: optionsKey(entries), inputs };
}

function builtFromSameInputs(root: string, entries: FunctionEntry[]): boolean {
  let record: InputsRecord;
  try {
    record = JSON.parse(readFileSync(join(root, INPUTS_FILE), 'utf8')) as InputsRecord;
  } catch {
    return false;
  }
  if (record.options !== optionsKey(entries)) return false;
  if (!entries.every((fn) => existsSync(join(bundleDirOf(fn.entry, root), BUNDLE_FILE)))) return false;
  try {
    return Object.entries(record.inputs).every(([path, sha]) => sha256Of(join(REPO_ROOT, path)) === sha);
  } catch {
    return false;
  }
}

/**
 * A sanity cap on a function bundle (index.mjs, minified; the source map beside it does not count): 1 MiB. The
 * target that matters is cold-start time (`npm run bench:cold`, at most 150 ms per function, docs/benchmarks.md);
 * this only catches a dependency pulled in by mistake. A bundle over it fails the `bundled` test project
 * (test/global-setup-bundles.ts) and `npm run build:functions`.
 */
export const MAX_BUNDLE_BYTES = 1024 * 1024;

/** The bundles over the limit among `built` (`max`, MAX_BUNDLE_BYTES unless given), with their size and limit. */
export function oversizedBundles(built: { file: string; names: string[] }[], max = MAX_BUNDLE_BYTES) {
  return built
    .map((b) => ({
      names: b.names,
      file: b.file,
      bytes: statSync(b.file).size,
      max,
    }))
    .filter((b) => b.bytes > b.max);
}

/** Why `oversizedBundles` refused, in one line per bundle. */
export function describeOversized(over: { names: string[]; bytes: number; max?: number }[]): string {
  return over
    .map(
      (b) =>
        `${b.names.join(', ')}: ${(b.bytes / 1024).toFixed(1)} KB, over the ${(b.max ?? MAX_BUNDLE_BYTES) / 1024} KB limit`,
    )
    .join('\n');
}

/**
 * Runs `build` into `outputDir`, or copies what an earlier synth built under the same `key`. Only when
 * CDK_BUNDLE_CACHE_DIR names a directory: test/unit/bin/app.test.ts runs the CDK CLI several times on the same sources and
 * gives every run after the first the first run's bundles (byte for byte what it built, so the asset hashes are the
 * same). Without it (an operator's synth) every synth builds afresh. The cache is never consulted across source
 * changes: its directory lives as long as one test file.
 */
export function withBundleCache(key: string, outputDir: string, build: () => void): void {
  const root = process.env.CDK_BUNDLE_CACHE_DIR;
  if (!root) {
    build();
    return;
  }
  const cached = join(root, key.replace(/[^A-Za-z0-9._-]/g, '_'));
  const done = `${cached}.done`;
  if (existsSync(done)) {
    cpSync(cached, outputDir, { recursive: true });
    return;
  }
  build();
  const partial = `${cached}.partial-${process.pid}`;
  cpSync(outputDir, partial, { recursive: true });
  rmSync(cached, { recursive: true, force: true });
  renameSync(partial, cached);
  writeFileSync(done, '');
}

/** A path relative to the repository root, for messages. */
export const repoRelative = (path: string) => relative(REPO_ROOT, path);
