/** @covers packages/drc/package.json */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, machineNode, PACKAGE_DIR, REPO_ROOT } from '#bin/build-cli.js';

/**
 * The drc package as it is staged for packing: one bundled ES module that the machine's Node (20 here) runs from any
 * folder, with nothing installed beside it.
 */
const run = promisify(execFile);
let stage: string;
let bundle: string;
const elsewhere = mkdtempSync(join(tmpdir(), 'drc-elsewhere-'));
const node = machineNode();
const drc = (...args: string[]) =>
  run(node, [bundle, ...args], {
    cwd: elsewhere,
    env: { PATH: '/usr/bin:/bin', HOME: elsewhere, DRC_CONFIG_DIR: join(elsewhere, 'config') },
  });

beforeAll(async () => {
  ({ stage, bundle } = await buildCli());
}, 120_000);
afterAll(() => {
  rmSync(stage, { recursive: true, force: true });
  rmSync(elsewhere, { recursive: true, force: true });
});

describe('the drc package', () => {
  it('declares its bin, Node 20 and no dependency: everything it runs is in its one file', () => {
    const pkg = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8'));
    const root = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({
      bin: { drc: 'dist/bin/drc.mjs' },
      engines: { node: '>=20' },
      dependencies: {},
    });
    expect(pkg.version).toBe(root.version);
    for (const file of pkg.files) expect(existsSync(join(stage, file)), file).toBe(true);
  });

  it('runs on the machine’s Node from any folder: version, help, the token for scripts', async () => {
    const version = await run(node, ['--version']);
    expect(Number(version.stdout.slice(1).split('.')[0])).toBeGreaterThanOrEqual(20);
    expect((await drc('--version')).stdout.trim()).toBe(
      JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')).version,
    );
    const help = (await drc('files', 'download', '--help')).stdout;
    for (const option of ['--all', '--manifest', '--dir', '--jobs']) expect(help).toContain(option);
    expect((await drc('token', '--token', 'a.b.c')).stdout).toBe('a.b.c\n');
    // The task-service check is in the bundle; its contract is the package's openapi/task-service.json (above).
    expect((await drc('task-service', 'check', '--help')).stdout).toContain('--print-config');
  }, 60_000);
});
