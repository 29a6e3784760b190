/**
 * `npm run pack:cli [-- <directory>]`: stages the `drc` package (packages/drc with its bundle, bin/build-cli.ts) and
 * packs it with npm into dist/packages/, or the directory given. Its last line is the tarball's path relative to the
 * repository root, for `npm install -g "$(npm run -s pack:cli | tail -1)"` or `npx ./<that path> …`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { buildCli, PACKAGE_DIR, REPO_ROOT } from './build-cli.js';

const version = (dir: string) =>
  JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version as string;
if (version(PACKAGE_DIR) !== version(REPO_ROOT))
  throw new Error(
    `packages/drc/package.json has version ${version(PACKAGE_DIR)}, the repository ${version(REPO_ROOT)}`,
  );

const destination = resolve(process.argv[2] ?? join(REPO_ROOT, 'dist/packages'));
mkdirSync(destination, { recursive: true });
const { stage } = await buildCli();
try {
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', destination], {
      cwd: stage,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  ) as { filename: string; size: number }[];
  const tarball = join(destination, packed[0].filename);
  process.stdout.write(`drc ${version(PACKAGE_DIR)}: ${(packed[0].size / 1024).toFixed(0)} KB packed\n`);
  process.stdout.write(`${relative(REPO_ROOT, tarball)}\n`);
} finally {
  rmSync(stage, { recursive: true, force: true });
}
