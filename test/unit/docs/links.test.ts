import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The repository stands on its own: every relative link in its Markdown points at a file inside it, and every
 * #anchor at a heading that exists. (Links to the web are not followed: this machine has no network.)
 *
 * @covers docs/
 */
const ROOT = resolve(import.meta.dirname, '../../..');
const SKIP = new Set(['node_modules', '.git', 'cdk.out', '.local', '.test-data', 'coverage']);

function markdownFiles(dir = ROOT, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) markdownFiles(path, out);
    else if (entry.name.endsWith('.md')) out.push(path);
  }
  return out;
}

/** The text outside fenced code blocks and inline code, where a link is a link. */
function prose(markdown: string): string {
  return markdown.replace(/^\s*(`{3,}|~{3,})[\s\S]*?^\s*\1\s*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(markdown).matchAll(/^#{1,6}\s+(.*)$/gm)) {
    const base = m[1]
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

const files = markdownFiles();
const text = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));
// Headings inside code in the source (e.g. `## The local stack (`npm start`)`) keep their words in the anchor.
const headingsOf = (file: string) => anchors(text.get(file)!.replace(/`/g, ''));

describe('Markdown links', () => {
  it.each(files.map((f) => [relative(ROOT, f), f]))(
    '%s links only to files and headings inside the repository',
    (_, file) => {
      const broken: string[] = [];
      for (const m of prose(text.get(file)!).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)|href="([^"]+)"/g)) {
        const target = m[1] ?? m[2];
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        const [path, anchor] = target.split('#');
        const resolved = path ? resolve(dirname(file), decodeURIComponent(path)) : file;
        if (relative(ROOT, resolved).startsWith('..')) {
          broken.push(`${target}: outside the repository`);
          continue;
        }
        if (!existsSync(resolved)) {
          broken.push(`${target}: no such file`);
          continue;
        }
        if (
          anchor &&
          statSync(resolved).isFile() &&
          resolved.endsWith('.md') &&
          !headingsOf(resolved).has(anchor)
        )
          broken.push(`${target}: no heading #${anchor} in ${relative(ROOT, resolved)}`);
      }
      expect(broken).toEqual([]);
    },
  );
});
