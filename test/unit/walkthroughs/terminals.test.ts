import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BlockFailure } from '#test/walkthroughs/shell-session.js';
import { Terminals } from '#test/walkthroughs/terminals.js';

describe('Terminals', () => {
  let dir: string;
  let terminals: Terminals | undefined;
  const block = (terminal: string, code: string, line = 10, extra = {}) => ({
    file: 'D.md',
    line,
    heading: '## H',
    terminal,
    code,
    ...extra,
  });
  const open = () => {
    dir = mkdtempSync(join(tmpdir(), 'terminals-test-'));
    terminals = new Terminals({ cwd: dir, env: { PATH: process.env.PATH ?? '' }, dir: join(dir, 't') });
    return terminals;
  };
  afterEach(async () => {
    await terminals?.close();
    terminals = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('fails a block that uses a helper defined in another terminal, naming the command', async () => {
    const t = open();
    await t.run(block('curl', 'json() { echo "helper of the curl terminal"; }', 1));
    expect((await t.run(block('curl', 'json', 2))).output).toBe('helper of the curl terminal\n');
    const failure = await t.run(block('cli', 'echo start\njson', 3)).catch((e) => e);
    expect(failure).toBeInstanceOf(BlockFailure);
    expect(failure.message).toContain('D.md:3 (## H): failed with exit status 127');
    expect(failure.message).toContain('json: command not found');
    expect(failure.message).toContain('failing line: D.md:4');
    expect(t.names).toEqual(['curl', 'cli']);
  });

  it('keeps variables to the terminal that set them, and opens each terminal with the starting environment', async () => {
    const t = open();
    await t.run(block('a', 'TOKEN=secret; cd /', 1));
    expect((await t.run(block('a', 'echo "$TOKEN $PWD"', 2))).output).toBe('secret /\n');
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell code, not a template
    const other = await t.run(block('b', 'echo "${TOKEN:-unset} $PWD"', 3));
    expect(other.output).toBe(`unset ${dir}\n`);
    await expect(t.run(block('c', 'echo "$TOKEN"', 4))).rejects.toThrow(/TOKEN: unbound variable/);
  });

  it('fails the run when a server of another terminal ends by itself, naming the server', async () => {
    const t = open();
    await t.run(
      block('server', 'echo listening; sleep 0.3; echo crashed; exit 4', 7, {
        background: { ready: 'listening' },
      }),
    );
    await new Promise((r) => setTimeout(r, 600));
    const failure = await t.run(block('client', 'true', 9)).catch((e) => e);
    expect(failure).toBeInstanceOf(BlockFailure);
    expect(failure.message).toMatch(
      /D.md:7 \(## H\): the background block of terminal "server" ended \(status 4\)/,
    );
    expect(failure.output).toContain('crashed');
  });

  it('sends Ctrl-C to every terminal running a server, and reports how each ended', async () => {
    const t = open();
    const server = (name: string, code: number, line: number) =>
      block(
        name,
        `node -e "process.on('SIGINT', () => process.exit(${code})); console.log('listening'); setInterval(() => {}, 1000)"`,
        line,
        { background: { ready: 'listening' } },
      );
    await t.run(server('good', 0, 1));
    await t.run(server('bad', 3, 2));
    await t.run(block('shell', 'true', 3));
    const ended = await t.interruptAll();
    expect(ended.map((e) => [e.block.line, e.status])).toEqual([
      [1, 0],
      [2, 3],
    ]);
  });
});
