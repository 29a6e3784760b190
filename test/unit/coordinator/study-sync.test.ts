import { describe, expect, it } from 'vitest';
import type { MirroredStudy, StudyRepository } from '#functions/coordinator/ports.js';
import { normalizeTimestamp, syncStudies } from '#functions/coordinator/study-sync.js';

describe('timestamps from the dataservice', () => {
  it.each([
    ['2018-03-19T20:12:24.702813+00:00', '2018-03-19T20:12:24.702813Z'],
    ['2018-03-19T20:12:24.7+00:00', '2018-03-19T20:12:24.700000Z'],
    ['2018-03-19T20:12:24Z', '2018-03-19T20:12:24.000000Z'],
    ['2018-03-19T20:12:24.123456789Z', '2018-03-19T20:12:24.123456Z'],
    ['2018-03-19T22:12:24.5+02:00', '2018-03-19T20:12:24.500000Z'],
    ['2018-03-19 20:12:24', '2018-03-19T20:12:24.000000Z'],
  ])('normalizes %s to %s', (input, expected) => {
    expect(normalizeTimestamp(input)).toBe(expected);
  });
  it('gives null for missing or unreadable values', () => {
    expect(normalizeTimestamp(null)).toBeNull();
    expect(normalizeTimestamp('yesterday')).toBeNull();
  });
});

/** The port, held in memory: this tests the sync's decisions, not DynamoDB (the integration test does that). */
function memoryStudies(initial: { id: string; deleted: boolean }[]) {
  const rows = new Map(
    initial.map((s) => [s.id, { ...s } as { id: string; deleted: boolean; mirrored?: MirroredStudy }]),
  );
  const repo: Pick<StudyRepository, 'allIds' | 'upsertMirrored' | 'markDeleted'> = {
    allIds: async () => [...rows.values()].map(({ id, deleted }) => ({ id, deleted })),
    upsertMirrored: async (s) => {
      rows.set(s.id, { id: s.id, deleted: false, mirrored: s });
    },
    markDeleted: async (id) => {
      const r = rows.get(id);
      if (r) r.deleted = true;
    },
  };
  return { rows, repo: repo as StudyRepository };
}

async function* pages(...ps: unknown[][]) {
  for (const p of ps) yield p;
}

describe('study sync', () => {
  it('upserts every page, flags vanished studies and restores reappearing ones', async () => {
    const { rows, repo } = memoryStudies([
      { id: 'SD_AAAAAAAA', deleted: false },
      { id: 'SD_BBBBBBBB', deleted: true },
      { id: 'SD_CCCCCCCC', deleted: false },
    ]);
    const result = await syncStudies(
      { studies: repo },
      pages(
        [{ kf_id: 'SD_AAAAAAAA', name: 'A', visible: false, created_at: '2018-03-19T20:12:24.702813+00:00' }],
        [
          { kf_id: 'SD_BBBBBBBB', name: 'B' },
          { kf_id: 'SD_DDDDDDDD', name: 'D', version: 'v3' },
          { nope: true },
        ],
      ),
    );
    expect(result).toEqual({ total: 3, new: 1, deleted: 1, restored: 1, skipped: 1 });
    expect(rows.get('SD_CCCCCCCC')?.deleted).toBe(true);
    expect(rows.get('SD_BBBBBBBB')?.deleted).toBe(false);
    expect(rows.get('SD_AAAAAAAA')?.mirrored).toEqual({
      id: 'SD_AAAAAAAA',
      name: 'A',
      version: null,
      visible: false,
      createdAt: '2018-03-19T20:12:24.702813Z',
    });
    expect(rows.get('SD_DDDDDDDD')?.mirrored?.visible).toBe(true);
  });

  it('flags nothing when reading the source fails', async () => {
    const { rows, repo } = memoryStudies([{ id: 'SD_AAAAAAAA', deleted: false }]);
    async function* failing() {
      yield [];
      throw new Error('source down');
    }
    await expect(syncStudies({ studies: repo }, failing())).rejects.toThrow('source down');
    expect(rows.get('SD_AAAAAAAA')?.deleted).toBe(false);
  });
});
