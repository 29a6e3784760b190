/**
 * `npm run pack:kit`: the task-service kit's npm tarball, `release-coordinator-task-service-<version>.tgz`, compiled
 * (dist/: JavaScript with its type declarations) and with its TypeScript source, as `npm publish` would ship it.
 * A task service installs it in its own repository (`npm install ./vendor/release-coordinator-task-service-….tgz`),
 * so that `npm ci` there needs nothing of this clone (docs/task-service-authors.md).
 *
 *   tsx bin/pack-kit.ts [--out <dir>]        (default dist/kit/; prints the tarball's path)
 *
 * Nothing is written into packages/task-service: the package is compiled and packed in a scratch folder, so the
 * clone stays as it was (the docs' walkthroughs check that).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const KIT = join(ROOT, 'packages/task-service');
const args = process.argv.slice(2);
const at = args.indexOf('--out');
const out = resolve(at >= 0 ? args[at + 1] : join(ROOT, 'dist/kit'));

const stage = mkdtempSync(join(tmpdir(), 'pack-kit-'));
try {
  // Compiled from the package's own sources, its dependencies resolved from this clone, into the scratch folder.
  execFileSync(
    join(ROOT, 'node_modules/.bin/tsc'),
    ['-p', join(KIT, 'tsconfig.build.json'), '--outDir', join(stage, 'dist')],
    { stdio: 'inherit' },
  );
  cpSync(join(KIT, 'src'), join(stage, 'src'), { recursive: true });
  cpSync(join(KIT, 'README.md'), join(stage, 'README.md'));
  const pkg = JSON.parse(readFileSync(join(KIT, 'package.json'), 'utf8'));
  // Built already: the tarball's package builds nothing when it is packed or installed.
  delete pkg.scripts;
  writeFileSync(join(stage, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  mkdirSync(out, { recursive: true });
  const packed = JSON.parse(
    execFileSync('npm', ['pack', stage, '--pack-destination', out, '--json', '--ignore-scripts'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  ) as { filename: string; files: { path: string }[] }[];
  const tarball = join(out, packed[0].filename);
  const files = packed[0].files.map((f) => f.path);
  for (const needed of ['dist/index.js', 'dist/index.d.ts', 'dist/cdk.js', 'dist/cdk.d.ts', 'package.json'])
    if (!files.includes(needed)) throw new Error(`the tarball lacks ${needed}`);
  process.stdout.write(`${tarball}\n`);
} finally {
  rmSync(stage, { recursive: true, force: true });
}
