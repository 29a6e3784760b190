import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Every import under functions/ points one way: handler -> use case -> port <- adapter. Only the handlers (the
 * entry points, the scheduled reconciler's included) wire adapters; use cases see ports and domain errors, so each
 * bundle carries only the adapters its own handler builds.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const FUNCTIONS = join(ROOT, 'functions');

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? tsFiles(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : [],
  );
}

/** Relative imports of a file (static, type-only and dynamic), as paths relative to functions/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]);
  return specs.map((s) => relative(FUNCTIONS, resolve(dirname(file), s)).replace(/\.js$/, '.ts'));
}

const files = tsFiles(FUNCTIONS).map((f) => ({ path: relative(FUNCTIONS, f), imports: importsOf(f) }));
const AREAS = ['coordinator', 'orchestration', 'files'];
const isEntryPoint = (path: string) => /^[^/]+\/handlers\//.test(path);

describe('import direction in functions/', () => {
  it('finds the files it checks', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(files.some((f) => f.path === 'coordinator/releases.ts')).toBe(true);
  });

  it('lets no use case, port or model import an adapter: only entry points wire adapters', () => {
    const offending = files
      .filter((f) => AREAS.includes(f.path.split('/')[0]) && !isEntryPoint(f.path))
      .flatMap((f) => f.imports.filter((i) => i.startsWith('adapters/')).map((i) => `${f.path} -> ${i}`));
    expect(offending).toEqual([]);
  });

  it('lets nothing import a handler module (each is a bundle of its own)', () => {
    const offending = files.flatMap((f) =>
      f.imports.filter((i) => i.includes('/handlers/')).map((i) => `${f.path} -> ${i}`),
    );
    expect(offending).toEqual([]);
  });

  it('keeps shared/ free of the areas and the adapters', () => {
    const offending = files
      .filter((f) => f.path.startsWith('shared/'))
      .flatMap((f) =>
        f.imports
          .filter((i) => i.startsWith('adapters/') || AREAS.includes(i.split('/')[0]))
          .map((i) => `${f.path} -> ${i}`),
      );
    expect(offending).toEqual([]);
  });

  it('has one composition root per handler, not per area', () => {
    const roots = files.filter((f) => /^[^/]+\/(deps|index)\.ts$/.test(f.path)).map((f) => f.path);
    expect(roots).toEqual([]);
  });
});
