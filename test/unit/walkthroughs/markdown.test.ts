import { describe, expect, it } from 'vitest';
import { extractShellBlocks, MarkerError } from '#test/walkthroughs/markdown.js';

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
