import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TestSpecification } from 'vitest/node';
import SlowestFirst, { MAX_WORKERS, SLOWEST_FIRST } from '#test/sequencer.js';

const ROOT = join(import.meta.dirname, '..', '..');

const spec = (path: string, project: string, groupOrder = 0) =>
  ({
    moduleId: join(ROOT, path),
    project: { name: project, config: { sequence: { groupOrder }, isolate: true } },
  }) as unknown as TestSpecification;

describe('the order npm test starts its files in', () => {
  it('names only files that exist', () => {
    for (const path of SLOWEST_FIRST) expect(existsSync(join(ROOT, path)), path).toBe(true);
  });

  it('starts the slowest first across projects, keeps groupOrder first, and leaves the rest in vitest’s order', async () => {
    const files = [
      spec('test/integration/coordinator/a.int.test.ts', 'integration'),
      spec('test/walkthroughs/docs.walk.test.ts', 'walkthroughs', 2),
      spec('test/integration/coordinator/b.int.test.ts', 'integration'),
      spec('test/unit/bin/app.test.ts', 'cdk'),
      spec('test/integration/local-stack/kill-drill.int.test.ts', 'integration'),
    ];
    const ctx = {
      config: { root: ROOT, shard: undefined },
      cache: { getTestSpecificationResult: () => undefined },
    };
    const sorted = await new SlowestFirst(ctx as never).sort(files);
    expect(sorted.map((s) => s.moduleId.slice(ROOT.length + 1))).toEqual([
      'test/unit/bin/app.test.ts',
      'test/integration/local-stack/kill-drill.int.test.ts',
      expect.stringMatching(/coordinator\/[ab]\.int/),
      expect.stringMatching(/coordinator\/[ab]\.int/),
      'test/walkthroughs/docs.walk.test.ts',
    ]);
  });

  it('runs at least two files at once', () => {
    expect(MAX_WORKERS).toBeGreaterThanOrEqual(2);
  });
});
