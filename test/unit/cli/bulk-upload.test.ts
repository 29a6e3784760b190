import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expandPaths } from '#cli/bulk-upload.js';

describe('the files an upload names', () => {
  it('are the files given, and the regular files directly in a directory given, not hidden, once each', () => {
    const dir = mkdtempSync(join(tmpdir(), 'upload-'));
    for (const name of ['b.txt', 'a.txt', '.hidden']) writeFileSync(join(dir, name), name);
    mkdirSync(join(dir, 'nested'));
    writeFileSync(join(dir, 'nested', 'c.txt'), 'c');
    const paths = expandPaths([dir, join(dir, 'a.txt')]).map((f) => f.path);
    expect(paths).toEqual([join(dir, 'a.txt'), join(dir, 'b.txt')]);
  });

  it('refuses a path that does not exist, and a directory with nothing to upload', () => {
    const dir = mkdtempSync(join(tmpdir(), 'upload-'));
    expect(() => expandPaths([join(dir, 'missing')])).toThrow(/no such file or directory/);
    expect(() => expandPaths([dir])).toThrow(/no file to upload/);
  });
});
