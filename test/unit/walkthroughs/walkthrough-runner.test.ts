import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { extractShellBlocks, MarkerError } from '../../walkthroughs/markdown.js';
import { BlockFailure, ShellSession } from '../../walkthroughs/shell-session.js';

const doc = (...lines: string[]) => lines.join('\n');

describe('extractShellBlocks', () => {
  it('finds bash, sh and shell blocks with their first code line and nearest heading, and nothing else', () => {
    const blocks = extractShellBlocks(
      doc(
        '# Title',
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
        '   ```sh',
        '   echo two',
        '     indented',
        '   ```',
        '~~~shell',
        'echo three',
        '~~~',
      ),
      'X.md',
    );
    expect(blocks).toEqual([
      { file: 'X.md', line: 3, heading: '# Title', code: 'echo one' },
      { file: 'X.md', line: 14, heading: '## Step', code: 'echo two\n  indented' },
      { file: 'X.md', line: 18, heading: '## Step', code: 'echo three' },
    ]);
  });

  it('reads background, ready, timeout and skip markers; a skip reason may hold semicolons', () => {
    const blocks = extractShellBlocks(
      doc(
        '<!-- walkthrough: background; ready: listening on; timeout: 30 -->',
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
    expect(blocks[0]).toMatchObject({ background: { ready: 'listening on' }, timeoutSeconds: 30 });
    expect(blocks[1]).toMatchObject({ skip: 'needs AWS; not a local stack' });
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
    ['a marker at the end', '```bash\nx\n```\n<!-- walkthrough: background -->', /end of the document/],
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

  it('runs a background block in a fresh shell, goes on once it is ready, and stops it at the end', async () => {
    const s = open({ GREETING: 'from the environment' });
    await s.run(block('LOCAL=only-here'));
    const bg = block(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell code, not a template
      'echo "${LOCAL:-unset} $GREETING"; echo "$$" > "$PWD/bg.pid"; echo listening; exec sleep 60',
      5,
      { background: { ready: 'listening' } },
    );
    const { output } = await s.run(bg);
    expect(output).toContain('unset from the environment');
    const pid = Number((await s.run(block('cat bg.pid'))).output.trim());
    expect(() => process.kill(pid, 0)).not.toThrow();
    await s.close();
    expect(() => process.kill(pid, 0)).toThrow();
  });

  it('fails a background block that exits before it is ready', async () => {
    const s = open();
    const bg = block('echo starting; exit 3', 5, { background: { ready: 'listening' } });
    await expect(s.run(bg)).rejects.toThrow(/exited with status 3 before printing "listening"/);
  });

  it('fails a block that outlives its timeout', async () => {
    const s = open();
    await expect(s.run(block('sleep 30', 1, { timeoutSeconds: 0.5 }))).rejects.toThrow(
      /did not finish within 0.5 s/,
    );
  });
});
