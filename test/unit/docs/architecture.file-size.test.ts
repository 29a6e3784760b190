import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Every file under functions/ can be read at once: at most MAX_LINES lines, or it says why it is longer (a comment
 * containing "longer than 500 lines because"). A repository that grows past it splits by action into a folder of its
 * own (functions/adapters/dynamodb/releases/ is the example).
 *
 * @covers docs/architecture.md
 */
const ROOT = resolve(import.meta.dirname, '../../..');
const MAX_LINES = 500;
const EXCUSE = /longer than 500 lines because/i;

function sources(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sources(path, out);
    else if (/\.(ts|tsx|mjs|js)$/.test(entry.name)) out.push(path);
  }
  return out;
}

describe('file size under functions/', () => {
  it('keeps every file within 500 lines, or has it say why', () => {
    const files = sources(join(ROOT, 'functions'));
    expect(files.length).toBeGreaterThan(100);
    const long = files
      .map((f) => ({ file: relative(ROOT, f), text: readFileSync(f, 'utf8') }))
      .map(({ file, text }) => ({
        file,
        text,
        lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0),
      }))
      .filter(({ text, lines }) => lines > MAX_LINES && !EXCUSE.test(text))
      .map(({ file, lines }) => `${file}: ${lines} lines`);
    expect(long).toEqual([]);
  });
});
