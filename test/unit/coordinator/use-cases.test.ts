import { describe, expect, it } from 'vitest';
import { createEvent } from '../../../functions/coordinator/events.js';
import type { MirroredStudy, StudyRepository } from '../../../functions/coordinator/ports.js';
import { MAX_TASKS_PER_RELEASE, startRelease } from '../../../functions/coordinator/releases.js';
import { normalizeTimestamp, syncStudies } from '../../../functions/coordinator/study-sync.js';
import {
  parseProgress,
  reportTask,
  type TaskCallbackDeps,
} from '../../../functions/coordinator/task-callback.js';
import { checkServiceUrl } from '../../../functions/coordinator/url-policy.js';
import {
  compareVersions,
  provisionalVersion,
  publishedVersion,
  versionSortKey,
} from '../../../functions/coordinator/versions.js';
import { MAX_LIMIT } from '../../../functions/shared/list.js';

const OPEN = { allowPrivate: true, allowHttp: true };
const normalizeServiceUrl = (url: string) => checkServiceUrl(url, OPEN);

describe('versions', () => {
  it('starts at 0.0.1 and gives the next patch after the highest published version', () => {
    expect(provisionalVersion(null)).toBe('0.0.1');
    expect(provisionalVersion('0.2.0')).toBe('0.2.1');
  });
  it('publishes as the next minor, or the next major when is_major', () => {
    expect(publishedVersion(null, false)).toBe('0.1.0');
    expect(publishedVersion('1.4.2', false)).toBe('1.5.0');
    expect(publishedVersion('1.4.2', true)).toBe('2.0.0');
  });
  it('sorts numerically, also as a DynamoDB sort key', () => {
    expect(compareVersions('0.10.0', '0.9.9')).toBeGreaterThan(0);
    expect(versionSortKey('0.10.0') > versionSortKey('0.9.9')).toBe(true);
    expect(() => versionSortKey('1.2')).toThrow();
  });
});

describe('progress', () => {
  it.each([
    [50, 50],
    ['50%', 50],
    ['7', 7],
    [' 100 % ', 100],
    [0, 0],
    [33.4, 33],
  ])('stores %j as %i', (input, expected) => {
    expect(parseProgress(input)).toBe(expected);
  });
  it.each([[-1], [101], ['half'], ['50%%'], [null], [true]])('refuses %j naming progress', (input) => {
    expect(() => parseProgress(input)).toThrow(
      expect.objectContaining({ status: 400, fields: { progress: expect.any(Array) } }),
    );
  });
});

describe('task service urls', () => {
  it('strips trailing slashes and keeps paths', () => {
    expect(normalizeServiceUrl(' https://svc.example/base/// ')).toBe('https://svc.example/base');
    expect(normalizeServiceUrl('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
  });
  it.each(['ftp://x', 'mailto:a@b', '//x', 'x', 'http://a/?q=1'])('refuses %s under url', (url) => {
    expect(() => normalizeServiceUrl(url)).toThrow(
      expect.objectContaining({ fields: { url: expect.any(Array) } }),
    );
  });
});

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

describe('startRelease', () => {
  it(`refuses more than ${MAX_TASKS_PER_RELEASE} enabled services (one transaction holds 100 items)`, async () => {
    const services = Array.from({ length: MAX_TASKS_PER_RELEASE + 1 }, (_, i) => ({
      id: `TS_${i}`,
      name: `s${i}`,
    }));
    const deps = {
      studies: { missing: async () => [] },
      releases: {
        highestPublishedVersion: async () => null,
        create: async () => {
          throw new Error('must not be called');
        },
      },
      taskServices: {
        enabledForNewRelease: async () => ({ services, guard: { servicesRev: 0, releaseSeq: 0 } }),
      },
      orchestrator: { start: async () => {} },
    } as unknown as Parameters<typeof startRelease>[0];
    await expect(
      startRelease(deps, {
        name: 'r',
        description: '',
        isMajor: false,
        author: 'a',
        tags: [],
        studies: ['SD_1'],
      }),
    ).rejects.toMatchObject({ status: 409 });
  });
});

describe('event fan-out', () => {
  const input = { name: 'r', description: '', isMajor: false, author: 'a', tags: [], studies: ['SD_1'] };

  it('publishes the creation event of a new release after the transaction, then starts the orchestrator', async () => {
    const calls: string[] = [];
    const created = { id: 'EV_1', eventType: 'info', message: 'created' };
    const deps = {
      studies: { missing: async () => [] },
      releases: {
        highestPublishedVersion: async () => null,
        create: async () => ({
          release: { id: 'RE_1' },
          tasks: [],
          notes: [],
          extras: {},
          events: [created],
        }),
      },
      taskServices: { enabledForNewRelease: async () => ({ services: [], guard: { servicesRev: 0 } }) },
      orchestrator: { start: async () => void calls.push('start') },
      publisher: { publish: async (events: unknown[]) => void calls.push(`publish ${events.length}`) },
    } as unknown as Parameters<typeof startRelease>[0];
    await startRelease(deps, input);
    expect(calls).toEqual(['publish 1', 'start']);
  });

  it('publishes an event created through POST /events', async () => {
    const published: unknown[] = [];
    const event = { id: 'EV_2', eventType: 'info', message: 'hello' };
    const deps = {
      events: { create: async () => event },
      releases: {},
      taskServices: { get: async () => null },
      publisher: { publish: async (events: unknown[]) => void published.push(...events) },
    } as unknown as Parameters<typeof createEvent>[0];
    const actor = { isAdmin: false, identity: 'client-a' };
    await expect(createEvent(deps, { eventType: 'info', message: 'hello' } as never, actor)).resolves.toBe(
      event,
    );
    expect(published).toEqual([event]);
  });
});

describe('task callbacks', () => {
  /** Two tasks of one running release; the repository answers from this map and records the changes written. */
  function release() {
    const tasks = new Map(
      ['TA_1', 'TA_2'].map((id) => [
        id,
        {
          id,
          releaseId: 'RE_1',
          taskServiceId: `TS_${id}`,
          serviceName: 's',
          state: 'running' as string,
          progress: 0,
          createdAt: '2026-11-26T00:00:00.000000Z',
        },
      ]),
    );
    const woken: string[] = [];
    const deps = {
      releases: {
        getTask: async (id: string) => ({ ...tasks.get(id) }),
        stateOf: async () => 'running',
        applyChange: async (c: { tasks: { taskId: string; toState?: string }[] }) => {
          for (const t of c.tasks)
            if (t.toState) (tasks.get(t.taskId) as { state: string }).state = t.toState;
          return [];
        },
        listTasks: async () => ({ count: tasks.size, items: [...tasks.values()].map((t) => ({ ...t })) }),
      },
      taskServices: { get: async () => null },
      orchestrator: { wake: async (id: string) => void woken.push(id) },
      publisher: { publish: async () => {} },
    } as unknown as TaskCallbackDeps;
    return { deps, woken };
  }
  const service = { isAdmin: false, identity: 'svc' };

  it('wakes the release only with the report that completes its phase', async () => {
    const { deps, woken } = release();
    await reportTask(deps, 'TA_1', { state: 'staged' }, service);
    expect(woken).toEqual([]);
    await reportTask(deps, 'TA_2', { state: 'staged' }, service);
    expect(woken).toEqual(['RE_1']);
  });

  it('reads the whole release in one page: a release never has more tasks than a page holds', () => {
    expect(MAX_TASKS_PER_RELEASE).toBeLessThanOrEqual(MAX_LIMIT);
  });
});
