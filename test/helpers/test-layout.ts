import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript5';

/**
 * The unit tests mirror the code (docs/architecture.md, "Tests"): a test of `<dir>/<name>.<ext>` is
 * `test/unit/<mirror of dir>/<name>.test.ts` (or `<name>.<aspect>.test.ts`), where the mirror of a path drops a
 * leading `functions/` or `test/` and the dot of a hidden top-level folder (vitest skips hidden folders):
 *
 *   functions/coordinator/releases.ts   ->  test/unit/coordinator/releases.test.ts
 *   lib/nag.ts                          ->  test/unit/lib/nag.test.ts
 *   test/helpers/asl-lint.ts            ->  test/unit/helpers/asl-lint.test.ts
 *   package.json                        ->  test/unit/package.install.test.ts
 *
 * What a test covers is read by the TypeScript compiler, not by pattern: the modules it imports (static and
 * dynamic imports, resolved as tsc resolves them, `#functions/...` aliases included), plus the paths named by
 * `@covers <path>` in its comments, for a subject that is not imported (a document, a JSON file, a command a test
 * runs, or a whole folder: `@covers docs/`, whose tests then sit in `test/unit/docs/`).
 */
export const ROOT = resolve(import.meta.dirname, '../..');
const UNIT = 'test/unit';

/** The mirror of a repository path under test/unit/ (without the test/unit/ prefix). */
export function mirror(path: string): string {
  return path.replace(/^(functions|test)\//, '').replace(/^\./, '');
}

const compilerOptions = (() => {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  return ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT).options;
})();

/** Repository paths of the project modules a file imports, resolved by the TypeScript compiler. */
export function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const { importedFiles } = ts.preProcessFile(text, true, true);
  const out: string[] = [];
  for (const { fileName } of importedFiles) {
    const resolved = ts.resolveModuleName(fileName, join(ROOT, file), compilerOptions, ts.sys).resolvedModule;
    if (!resolved || resolved.isExternalLibraryImport) continue;
    const path = relative(ROOT, resolved.resolvedFileName);
    if (!path.startsWith('..') && !path.includes('node_modules/')) out.push(path);
  }
  return out;
}

/** The paths named by `@covers <path>` in a file's comments (a folder ends with `/`). */
export function coversOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const named: string[] = [];
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, text);
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (kind !== ts.SyntaxKind.MultiLineCommentTrivia && kind !== ts.SyntaxKind.SingleLineCommentTrivia)
      continue;
    for (const m of scanner.getTokenText().matchAll(/@covers\s+(\S+)/g)) named.push(m[1]);
  }
  return named;
}

/** Where a test of `covered` may sit: its mirror folder, and for a file the name it must start with. */
function placeOf(covered: string): { dir: string; name?: string } {
  const folder = (path: string) => join(UNIT, mirror(path)).replace(/\/$/, '');
  if (covered.endsWith('/')) return { dir: folder(covered) };
  const parent = dirname(covered);
  return { dir: folder(parent === '.' ? '' : `${parent}/`), name: basename(covered).replace(/\.[^.]+$/, '') };
}

/** Every test file under test/unit/. */
export function unitTests(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir))) {
      const path = join(dir, entry);
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (entry.endsWith('.test.ts')) out.push(path);
    }
  };
  walk(UNIT);
  return out.sort();
}

/** What is wrong with one test file's place: nothing (null), or why. */
export function checkTest(test: string): string | null {
  const named = coversOf(test);
  const missing = named.filter((p) => !existsSync(join(ROOT, p)));
  if (missing.length) return `names ${missing.join(', ')} in @covers, which does not exist`;
  const covered = [...new Set([...importsOf(test), ...named])].filter((p) => !p.startsWith(`${UNIT}/`));
  if (!covered.length) return 'covers no source file: import one, or name it with @covers <path>';
  const dir = dirname(test);
  const file = basename(test);
  for (const c of covered) {
    const place = placeOf(c);
    if (place.dir !== dir) continue;
    if (!place.name || file === `${place.name}.test.ts`) return null;
    if (file.startsWith(`${place.name}.`) && /^[a-z0-9-]+\.test\.ts$/.test(file.slice(place.name.length + 1)))
      return null;
  }
  const wanted = covered.map((c) => {
    const place = placeOf(c);
    return place.name ? `${place.dir}/${place.name}.test.ts` : `${place.dir}/`;
  });
  return `does not mirror what it covers; it would be one of ${wanted.join(', ')}`;
}

/**
 * Top-level folder names that two kinds of source would mirror to (functions/<x>/, test/<x>/ and <x>/ all land in
 * test/unit/<x>/): there must be none, or the mirror is ambiguous.
 */
export function mirrorCollisions(): string[] {
  const dirs = (path: string) =>
    readdirSync(join(ROOT, path), { withFileTypes: true })
      .filter((d) => d.isDirectory() && d.name !== 'node_modules' && d.name !== '.git')
      .map((d) => d.name.replace(/^\./, ''));
  const seen = new Map<string, string>();
  const collisions: string[] = [];
  for (const [from, names] of [
    ['functions/', dirs('functions')],
    ['test/', dirs('test').filter((d) => d !== 'unit')],
    ['', dirs('.')],
  ] as const)
    for (const name of names) {
      const other = seen.get(name);
      if (other !== undefined && other !== from) collisions.push(`${other}${name} and ${from}${name}`);
      seen.set(name, from);
    }
  return collisions;
}
