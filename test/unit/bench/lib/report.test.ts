import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeSection } from '#bench/lib/report.js';

const dir = mkdtempSync(join(tmpdir(), 'bench-report-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('benchmark sections in docs/benchmarks.md', () => {
  it('appends a new section and later replaces only that section', () => {
    const file = join(dir, 'benchmarks.md');
    writeFileSync(file, '# Benchmarks\n\n<!-- other:start -->\nother results\n<!-- other:end -->\n');
    writeSection(file, 'bench:api', '## API\nfirst run');
    writeSection(file, 'bench:api', '## API\nsecond run');
    const text = readFileSync(file, 'utf8');
    expect(text).toContain('<!-- other:start -->\nother results\n<!-- other:end -->');
    expect(text).toContain('<!-- bench:api:start -->\n## API\nsecond run\n<!-- bench:api:end -->');
    expect(text).not.toContain('first run');
    expect(text.indexOf('other results')).toBeLessThan(text.indexOf('second run'));
  });

  it('creates the file with a title when it does not exist', () => {
    const file = join(dir, 'new.md');
    writeSection(file, 'x', 'body');
    expect(readFileSync(file, 'utf8')).toBe('# Benchmarks\n\n<!-- x:start -->\nbody\n<!-- x:end -->\n');
  });
});
