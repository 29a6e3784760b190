import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkTest, mirror, mirrorCollisions, ROOT, unitTests } from '#test/helpers/test-layout.js';

/**
 * Every unit test names a source file it covers and sits where that file's tests belong (test/helpers/test-layout.ts
 * has the rule, docs/architecture.md the why): a file's tests are found by its path, never by grep.
 */
describe('the unit tests mirror the code', () => {
  it.each(unitTests())('%s covers a source file and mirrors its path', (test) => {
    expect(checkTest(test)).toBeNull();
  });

  it('no two kinds of source mirror to the same folder', () => {
    expect(mirrorCollisions()).toEqual([]);
  });

  it('mirrors functions/ and test/ without their prefix, and hidden folders without their dot', () => {
    expect(mirror('functions/coordinator/')).toBe('coordinator/');
    expect(mirror('test/helpers/')).toBe('helpers/');
    expect(mirror('lib/')).toBe('lib/');
    expect(mirror('.github/workflows/')).toBe('github/workflows/');
  });
});

describe('the check itself', () => {
  // Probes are not *.test.ts files, so no vitest run ever collects them.
  const dir = 'test/unit/coordinator/layout-probe';
  const probe = (name: string, text: string) => {
    mkdirSync(join(ROOT, dir), { recursive: true });
    writeFileSync(join(ROOT, dir, name), text);
    return `${dir}/${name}`;
  };
  afterAll(() => rmSync(join(ROOT, dir), { recursive: true, force: true }));

  it('refuses a test that covers no source file', () => {
    const test = probe('nothing.probe.ts', "import { it } from 'vitest';\nit('x', () => {});\n");
    expect(checkTest(test)).toMatch(/covers no source file/);
  });

  it('refuses a test that sits away from what it imports, and says where it belongs', () => {
    const test = probe('elsewhere.probe.ts', "import '../../../../functions/coordinator/versions.js';\n");
    expect(checkTest(test)).toMatch(/test\/unit\/coordinator\/versions\.test\.ts/);
  });

  it('refuses an @covers path that does not exist', () => {
    const test = probe('gone.probe.ts', '/** @covers docs/no-such-page.md */\n');
    expect(checkTest(test)).toMatch(/does not exist/);
  });
});
