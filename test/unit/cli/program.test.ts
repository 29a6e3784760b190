import type { Command } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildProgram, run } from '#cli/program.js';
import pkg from '../../../package.json' with { type: 'json' };

/** The command paths under `cmd`, leaves only ("releases watch", "login"). */
const leaves = (cmd: Command, prefix = ''): string[] =>
  cmd.commands.flatMap((sub) => {
    const path = `${prefix}${sub.name()}`;
    return sub.commands.length ? leaves(sub, `${path} `) : [path];
  });

const noSession = () => {
  throw new Error('no command runs in this test');
};

describe('drc, assembled from its command groups', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('registers every command of every group', () => {
    const program = buildProgram({ session: noSession, setExit: () => {}, hooks: {} });
    expect(leaves(program).sort()).toEqual(
      [
        'login',
        'logout',
        'studies ls',
        'services ls',
        'services add',
        'services rotate-secret',
        'services enable',
        'services disable',
        'services rm',
        'services quarantine',
        'services release',
        'releases ls',
        'releases show',
        'releases create',
        'releases watch',
        'releases publish',
        'releases cancel',
        'events ls',
        'events tail',
        'files ls',
        'files upload',
        'files download',
        'signed-url',
        'token',
        'dev-tokens create',
        'dev-tokens ls',
        'dev-tokens rm',
        'import',
        'task-service check',
        'maintenance',
      ].sort(),
    );
  });

  it('exits 0 for help, 2 for a usage error, and says why on stderr', async () => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    expect(await run(['releases', '--help'])).toBe(0);
    expect(out.mock.calls.join('')).toMatch(/publish \[options\] <id> +publish a staged release/);
    expect(await run(['releases', 'frobnicate'])).toBe(2);
    expect(await run(['studies', 'ls', '--limit', 'ten'])).toBe(2);
    expect(err.mock.calls.join('')).toMatch(/expected a whole number/);
  });

  it('prints the package version for --version and -V, and exits 0', async () => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    expect(await run(['--version'])).toBe(0);
    expect(await run(['-V'])).toBe(0);
    expect(out.mock.calls.join('')).toBe(`${pkg.version}\n`.repeat(2));
    expect(pkg.version).toMatch(/^\d+\.\d+\.\d+(-[\w.]+)?$/);
  });

  it('takes --json and --token after a command as before it, and maps a refused combination to exit 2', async () => {
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    vi.stubEnv('DRC_CONFIG_DIR', '/nonexistent/drc');
    const argv = ['services', 'add', 'svc', 'http://127.0.0.1:1', '--create-client', '--client-id', 'c'];
    expect(await run([...argv, '--json', '--token', 't'])).toBe(2);
    expect(await run(['--json', '--token', 't', ...argv])).toBe(2);
    // Between a group and its command too: every command takes them.
    expect(await run(['services', '--json', '--token', 't', ...argv.slice(1)])).toBe(2);
    expect(err.mock.calls.join('')).toBe(
      'drc: --create-client and --client-id exclude each other\n'.repeat(3),
    );
    vi.unstubAllEnvs();
  });
});
