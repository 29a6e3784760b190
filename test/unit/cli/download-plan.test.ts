import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  assignLocalNames,
  readSyncState,
  SYNC_STATE_FILE,
  withFileId,
  writeSyncState,
} from '#cli/download-plan.js';

const entry = (fileId: string, name: string, createdAt: string) => ({
  objectId: `FV_${fileId.slice(3)}`,
  fileId,
  versionId: `FV_${fileId.slice(3)}`,
  name,
  size: 1,
  sha256: '0'.repeat(64),
  createdAt,
});

describe('local names of a whole-study download', () => {
  it('puts the file id before the extensions', () => {
    expect(withFileId('reads.fastq.gz', 'SF_1')).toBe('reads.SF_1.fastq.gz');
    expect(withFileId('README', 'SF_1')).toBe('README.SF_1');
    expect(withFileId('.hidden', 'SF_1')).toBe('.hidden.SF_1');
  });

  it('writes files of one name side by side: the oldest keeps it, the others get their file id', () => {
    const names = assignLocalNames([
      entry('SF_NEWER', 'genes.tsv', '2026-02-01'),
      entry('SF_OLDER', 'genes.tsv', '2026-01-01'),
      entry('SF_ALONE', 'other.tsv', '2026-03-01'),
    ]);
    expect(Object.fromEntries(names.map((e) => [e.fileId, e.local]))).toEqual({
      SF_OLDER: 'genes.tsv',
      SF_NEWER: 'genes.SF_NEWER.tsv',
      SF_ALONE: 'other.tsv',
    });
  });

  it('never names a path, `.`, `..` or the sync state', () => {
    const names = assignLocalNames([
      entry('SF_A', '..', '1'),
      entry('SF_B', 'a/b', '1'),
      entry('SF_C', SYNC_STATE_FILE, '1'),
    ]);
    expect(names.map((e) => e.local).sort()).toEqual(['SF_A', 'SF_C', 'a_b']);
  });
});

describe('the sync state', () => {
  it('is one hidden file, written whole, read back; a missing or broken one is empty', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sync-'));
    expect(readSyncState(dir)).toEqual({ version: 1, files: {} });
    const state = {
      version: 1 as const,
      files: {
        'a.txt': { file_id: 'SF_A', version_id: 'FV_A', size: 1, sha256: 'f'.repeat(64), mtime_ms: 5 },
      },
    };
    writeSyncState(dir, state);
    expect(readdirSync(dir)).toEqual([SYNC_STATE_FILE]);
    expect(readSyncState(dir)).toEqual(state);
  });
});
