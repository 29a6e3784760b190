import { describe, expect, it } from 'vitest';
import { parseManifest } from '#cli/manifest-file.js';

/** What `drc files download --manifest` reads: the manifest as JSON or TSV, or a list of drs:// URIs. */
const row = {
  file_id: 'SF_AAAAAAA1',
  version_id: 'FV_BBBBBBB1',
  drs_uri: 'drs://files.example/FV_BBBBBBB1',
  name: 'genes.tsv',
  size: 12,
  sha256: 'A'.repeat(64),
  content_type: 'text/tab-separated-values',
  created_at: '2026-01-01T00:00:00.000000Z',
};
const item = {
  objectId: 'FV_BBBBBBB1',
  fileId: 'SF_AAAAAAA1',
  versionId: 'FV_BBBBBBB1',
  name: 'genes.tsv',
  size: 12,
  sha256: 'a'.repeat(64),
  createdAt: '2026-01-01T00:00:00.000000Z',
};

describe('a manifest file', () => {
  it('reads the JSON the service answers, its results array, and pages saved one after another', () => {
    const page = { count: 1, next: null, previous: null, results: [row], skipped: [] };
    expect(parseManifest(JSON.stringify(page))).toEqual([item]);
    expect(parseManifest(JSON.stringify([row]))).toEqual([item]);
    const two = `${JSON.stringify(page, null, 2)}\n${JSON.stringify({ ...page, results: [{ ...row, version_id: 'FV_BBBBBBB2' }] })}`;
    expect(parseManifest(two).map((i) => i.versionId)).toEqual(['FV_BBBBBBB1', 'FV_BBBBBBB2']);
  });

  it('reads TSV with its header line, a header repeated by a second page included', () => {
    const header = Object.keys(row).join('\t');
    const line = Object.values(row).join('\t');
    expect(parseManifest(`${header}\n${line}\n`)).toEqual([item]);
    expect(
      parseManifest(`${header}\n${line}\n${header}\n${line.replace('FV_BBBBBBB1', 'FV_BBBBBBB3')}\n`),
    ).toHaveLength(2);
    // Only what the file has: the rest is asked of the DRS API.
    expect(parseManifest('drs_uri\tname\ndrs://files.example/FV_1\tx.txt\n')).toEqual([
      { objectId: 'drs://files.example/FV_1', name: 'x.txt' },
    ]);
  });

  it('reads a list of drs:// URIs or version ids, skipping blank lines and # comments', () => {
    expect(parseManifest('# from the portal\ndrs://files.example/FV_BBBBBBB1\n\nFV_CCCCCCC1\r\n')).toEqual([
      { objectId: 'drs://files.example/FV_BBBBBBB1' },
      { objectId: 'FV_CCCCCCC1' },
    ]);
  });

  it('refuses what is none of these, naming the line', () => {
    expect(() => parseManifest('https://example.org/file\n')).toThrow(/line 1 is neither a drs:\/\/ URI/);
    expect(() => parseManifest('{"results": [{"name": "x"}]}', 'm.json')).toThrow(
      /m.json: row 1 names neither/,
    );
    expect(() => parseManifest('{"count": 1}')).toThrow(/neither a manifest nor a list/);
  });
});
