/**
 * `npm run lint:deps` (part of `npm test`): dependency-cruiser checks every import of the project against the rules
 * in .dependency-cruiser.cjs (the layering of functions/, and no circles anywhere). Exits 1 naming each violation.
 *
 *   tsx bin/lint-deps.ts [--base <dir>] [paths...]     (default: the whole project, from the repository root)
 *
 * `--base` cruises another tree with the same rules (the rules' paths are relative to it): the negative test runs
 * it on a fixture that breaks them, so the check is known to fail when it should.
 *
 * dependency-cruiser reads TypeScript with the TypeScript compiler's JavaScript API, which TypeScript 7 (this
 * project's compiler, a native binary) no longer has: its imports of `typescript` are answered with the
 * `typescript5` package (an alias of typescript@5, a devDependency), as lib/openapi/types.ts does for
 * openapi-typescript.
 */
import { registerHooks } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

registerHooks({
  resolve(specifier, context, next) {
    const fromCruiser = context.parentURL?.includes('/node_modules/dependency-cruiser/');
    const typescript = specifier === 'typescript' || specifier.startsWith('typescript/');
    return next(
      fromCruiser && typescript ? specifier.replace(/^typescript/, 'typescript5') : specifier,
      context,
    );
  },
});

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Every tree of the project that holds code (ui/ and the CLI included). */
const PROJECT = [
  'functions',
  'lib',
  'local',
  'cli',
  'clients',
  'bin',
  'bench',
  'cost',
  'ui/src',
  'test',
  'examples',
  'packages',
];

const args = process.argv.slice(2);
const baseAt = args.indexOf('--base');
const base = baseAt >= 0 ? resolve(args[baseAt + 1]) : ROOT;
const paths = args.filter((_, i) => i !== baseAt && i !== baseAt + 1);

const { cruise } = await import('dependency-cruiser');
const { default: extractDepcruiseOptions } = await import(
  'dependency-cruiser/config-utl/extract-depcruise-options'
);
const { default: extractTSConfig } = await import('dependency-cruiser/config-utl/extract-ts-config');

const options = await extractDepcruiseOptions(join(ROOT, '.dependency-cruiser.cjs'));
const started = performance.now();
const previous = process.cwd();
// The rules name paths relative to the tree cruised: run from its root.
process.chdir(base);
try {
  const result = await cruise(
    paths.length ? paths : PROJECT,
    {
      ...options,
      tsConfig: { fileName: join(ROOT, 'tsconfig.json') },
      baseDir: base,
      outputType: 'err',
      // Kept between runs, keyed by every file's content: an unchanged tree is checked in about a second.
      cache: {
        folder: join(ROOT, 'node_modules/.cache/dependency-cruiser', base === ROOT ? 'project' : 'other'),
        strategy: 'content',
      },
    },
    undefined,
    { tsConfig: extractTSConfig(join(ROOT, 'tsconfig.json')) },
  );
  process.stdout.write(String(result.output));
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stdout.write(`dependency-cruiser: ${result.output ? '' : 'ok, '}${seconds} s\n`);
  process.exitCode = result.exitCode;
} finally {
  process.chdir(previous);
}
