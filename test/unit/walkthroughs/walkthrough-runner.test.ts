import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { extractShellBlocks, MarkerError } from '../../walkthroughs/markdown.js';
import { BlockFailure, ShellSession } from '../../walkthroughs/shell-session.js';
import { Terminals } from '../../walkthroughs/terminals.js';

const doc = (...lines: string[]) => lines.join('\n');
const T = (name: string) => `<!-- walkthrough: terminal: ${name} -->`;

describe('extractShellBlocks', () => {
  it('finds bash, sh and shell blocks with their terminal, first code line and nearest heading, and nothing else', () => {
    const blocks = extractShellBlocks(
      doc(
        '# Title',
        T('one'),
        '```bash',
        'echo one',
        '```',
        '## Step',
        '```json',
        '{"not": "shell"}',
        '```',
        '```',
        'plain block',
        '```',
        '- a list item:',
        `   ${T('two')}`,
        '   ```sh',
        '   echo two',
        '     indented',
        '   ```',
        T('one'),
        '~~~shell',
        'echo three',
        '~~~',
      ),
      'X.md',
    );
    expect(blocks).toEqual([
      { file: 'X.md', line: 4, heading: '# Title', terminal: 'one', code: 'echo one' },
      { file: 'X.md', line: 16, heading: '## Step', terminal: 'two', code: 'echo two\n  indented' },
      { file: 'X.md', line: 21, heading: '## Step', terminal: 'one', code: 'echo three' },
    ]);
  });

  it('reads background, ready, timeout and skip markers; a skip reason may hold semicolons', () => {
    const blocks = extractShellBlocks(
      doc(
        '<!-- walkthrough: terminal: server; background; ready: listening on; timeout: 30 -->',
        '',
        '```bash',
        'serve',
        '```',
        '<!-- walkthrough: skip: needs AWS; not a local stack -->',
        '```bash',
        'cdk deploy',
        '```',
      ),
      'X.md',
    );
    expect(blocks[0]).toMatchObject({
      terminal: 'server',
      background: { ready: 'listening on' },
      timeoutSeconds: 30,
    });
    expect(blocks[1]).toMatchObject({ skip: 'needs AWS; not a local stack' });
    expect(blocks[1].terminal).toBeUndefined();
  });

  it.each([
    [
      'an unknown directive',
      '<!-- walkthrough: backgroud -->\n```bash\nx\n```',
      /unknown walkthrough directive/,
    ],
    ['a skip without a reason', '<!-- walkthrough: skip -->\n```bash\nx\n```', /needs a reason/],
    ['ready without background', '<!-- walkthrough: ready: up -->\n```bash\nx\n```', /only applies/],
    ['a marker before text', '<!-- walkthrough: background -->\ntext\n```bash\nx\n```', /right before/],
    [
      'a marker before a non-shell block',
      '<!-- walkthrough: background -->\n```json\n{}\n```',
      /"json" block/,
    ],
    [
      'a marker at the end',
      `${T('a')}\n\`\`\`bash\nx\n\`\`\`\n<!-- walkthrough: background -->`,
      /end of the document/,
    ],
    ['a block that names no terminal', 'Some text.\n\n```bash\nx\n```', /say which terminal it runs in/],
    [
      'a marker without a terminal',
      '<!-- walkthrough: timeout: 5 -->\n```bash\nx\n```',
      /say which terminal it runs in/,
    ],
    ['a terminal without a name', '<!-- walkthrough: terminal -->\n```bash\nx\n```', /needs a name/],
    [
      'a terminal name with spaces',
      '<!-- walkthrough: terminal: my shell -->\n```bash\nx\n```',
      /needs a name/,
    ],
  ])('refuses %s with the marker line', (_, markdown, message) => {
    expect(() => extractShellBlocks(markdown, 'X.md')).toThrow(MarkerError);
    expect(() => extractShellBlocks(markdown, 'X.md')).toThrow(message);
  });
});

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
