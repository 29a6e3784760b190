import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BlockFailure, ShellSession } from '#test/walkthroughs/shell-session.js';

describe('ShellSession', () => {
  let dir: string;
  let session: ShellSession | undefined;
  const block = (code: string, line = 10, extra = {}) => ({
    file: 'D.md',
    line,
    heading: '## H',
    code,
    ...extra,
  });
  const open = (env: Record<string, string> = {}) => {
    dir = mkdtempSync(join(tmpdir(), 'session-test-'));
    session = new ShellSession({
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', ...env },
      dir: join(dir, 's'),
    });
    return session;
  };
  afterEach(async () => {
    await session?.close();
    session = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('carries variables, functions and the working directory from block to block, and captures output', async () => {
    const s = open();
    await s.run(block('X=42; greet() { echo "hello $1"; }; mkdir sub; cd sub'));
    const { output } = await s.run(block('greet "$X from $(basename "$PWD")"'));
    expect(output).toBe('hello 42 from sub\n');
  });

  it('fails a block on its first failing command, naming its Markdown line and the command', async () => {
    const s = open();
    await s.run(block('check() { test "$1" = ok; }'));
    const failure = await s.run(block('echo before\ncheck ok\ncheck broken\necho never', 20)).catch((e) => e);
    expect(failure).toBeInstanceOf(BlockFailure);
    expect(failure.message).toContain('D.md:20 (## H): failed with exit status 1');
    expect(failure.message).toContain('failing line: D.md:22');
    expect(failure.message).toContain('failing command: test "$1" = ok');
    expect(failure.output).toContain('before');
    expect(failure.output).not.toContain('never');
  });

  it('treats an unset variable as a failure', async () => {
    const s = open();
    await expect(s.run(block('echo "$NOT_SET"'))).rejects.toThrow(/NOT_SET: unbound variable/);
  });

  it('treats a failure inside a pipeline as a failure', async () => {
    const s = open();
    await expect(s.run(block('false | cat'))).rejects.toThrow(/exit status 1/);
  });

  it('has no jq, so a document cannot come to depend on it', async () => {
    const s = open();
    await expect(s.run(block('echo "{}" | jq .'))).rejects.toThrow(/jq is not a prerequisite/);
  });

  it('runs a background block in its own terminal, goes on once it is ready, and stops it with Ctrl-C', async () => {
    const s = open({ GREETING: 'from the environment' });
    await s.run(block('LOCAL=set-in-this-terminal'));
    const bg = block(
      // A server that stops cleanly on SIGINT, as the reference task service does.
      `echo "$LOCAL $GREETING"; echo "$$" > "$PWD/shell.pid"; node -e "process.on('SIGINT', () => { console.log('stopping'); process.exit(0); }); console.log('listening'); setInterval(() => {}, 1000)"`,
      5,
      { background: { ready: 'listening' } },
    );
    const { output } = await s.run(bg);
    expect(output).toContain('set-in-this-terminal from the environment');
    // The terminal is busy with its server: a reader could not paste another block into it.
    await expect(s.run(block('echo more'))).rejects.toThrow(/its terminal is still running D.md:5/);
    const ended = await s.interrupt();
    expect(ended).toMatchObject({ status: 0 });
    expect(ended?.output).toContain('stopping');
  });

  it('reports a server that does not exit 0 on Ctrl-C', async () => {
    const s = open();
    await s.run(block('echo listening; sleep 60', 5, { background: { ready: 'listening' } }));
    // sleep dies of the SIGINT, and so does the shell that waited for it.
    expect((await s.interrupt())?.status).toBe('SIGINT');
  });

  it('fails a background block that exits before it is ready', async () => {
    const s = open();
    const bg = block('echo starting; exit 3', 5, { background: { ready: 'listening' } });
    await expect(s.run(bg)).rejects.toThrow(/ended \(exit status 3\) before printing "listening"/);
  });

  it('fails a block that outlives its timeout', async () => {
    const s = open();
    await expect(s.run(block('sleep 30', 1, { timeoutSeconds: 0.5 }))).rejects.toThrow(
      /did not finish within 0.5 s/,
    );
  });
});
