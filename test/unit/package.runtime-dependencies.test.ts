import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COORDINATOR_API, FILES_API } from '#lib/api-manifest.js';
import { REPO_ROOT } from '#lib/service-function.js';

/**
 * What deploys must be installable from `dependencies` alone: every package imported by code under functions/ (the
 * Lambda bundles) or ui/src/ (the dashboard), and every package whose files are shipped beside a bundle (the
 * manifest's `shipped`), is a runtime dependency, never a devDependency. Type-only imports are not code.
 *
 * @covers package.json
 */
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sources(path);
    return /\.(ts|tsx)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const packageOf = (specifier: string) =>
  specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];

/** Runtime imports (static and dynamic) of a file, by package name; relative, `#` and node: imports left out. */
function importedPackages(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found = new Set<string>();
  const statics = /^\s*(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm;
  const dynamics = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
  for (const re of [statics, dynamics])
    for (const m of text.matchAll(re)) {
      const spec = m[1];
      // `#functions/...` and the like are the package's own subpath imports (package.json `imports`), not packages.
      if (spec.startsWith('.') || spec.startsWith('#') || spec.startsWith('node:') || spec.startsWith('/'))
        continue;
      found.add(packageOf(spec));
    }
  return [...found];
}

describe('runtime dependencies', () => {
  const files = [...sources(join(REPO_ROOT, 'functions')), ...sources(join(REPO_ROOT, 'ui', 'src'))];

  it('every package the functions and the dashboard import is in dependencies', () => {
    const missing: string[] = [];
    for (const file of files)
      for (const name of importedPackages(file))
        if (!pkg.dependencies[name]) missing.push(`${relative(REPO_ROOT, file)}: ${name}`);
    expect(missing).toEqual([]);
  });

  it('finds the imports it checks (the AWS SDK clients among them)', () => {
    const all = new Set(files.flatMap(importedPackages));
    for (const name of ['@aws-sdk/client-s3', '@aws-sdk/s3-request-presigner', '@aws-sdk/client-lambda'])
      expect(all).toContain(name);
    // A type-only import is no runtime dependency.
    expect(all).not.toContain('aws-lambda');
  });

  it('every package shipped beside a bundle is in dependencies', () => {
    const shipped = [...COORDINATOR_API, ...FILES_API].flatMap((fn) => fn.shipped ?? []);
    expect(shipped.length).toBeGreaterThan(0);
    for (const file of shipped) expect(pkg.dependencies[packageOf(file)], file).toBeDefined();
  });

  it('no package is both a dependency and a devDependency', () => {
    expect(Object.keys(pkg.dependencies).filter((name) => name in pkg.devDependencies)).toEqual([]);
  });
});
