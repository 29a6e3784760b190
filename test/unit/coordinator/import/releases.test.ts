import { describe, expect, it } from 'vitest';
import { importReleases } from '#functions/coordinator/import/releases.js';
import { FakeImportStore } from './fake-store.js';

const BASE = 'http://original.example.org';
const task = (id: string, state: string, extra: Record<string, unknown> = {}) => ({
  kf_id: id,
  state,
  progress: state === 'published' ? 100 : 0,
  release: `${BASE}/releases/RE_00000001`,
  task_service: `${BASE}/task-services/TS_00000001`,
  created_at: '2019-03-04T05:06:07.123456Z',
  service_name: 'reports',
  ...extra,
});
const release = (state: string, tasks: unknown[], extra: Record<string, unknown> = {}) => ({
  kf_id: 'RE_00000001',
  name: 'Release 1',
  description: '',
  notes: [],
  state,
  studies: ['SD_00000001'],
  tasks,
  version: '0.3.0',
  created_at: '2019-03-04T05:06:07Z',
  tags: [],
  author: 'admin',
  is_major: false,
  ...extra,
});

/** The ReleaseWrite the use case handed to the store. */
function releaseWritten(s: FakeImportStore): any {
  const w = s.written.find((x) => x.kind === 'release');
  if (!w) throw new Error('no release was written');
  return w.value;
}

const store = () =>
  new FakeImportStore().put('task_service', 'TS_00000001', null).put('study', 'SD_00000001', null);

describe('importing releases', () => {
  it('keeps a published release and its tasks as they were, to the microsecond', async () => {
    const s = store();
    const results = await importReleases(
      { imports: s },
      [release('published', [task('TA_00000001', 'published')])],
      {
        dryRun: false,
      },
    );
    expect(results).toEqual([
      { resource: 'release', id: 'RE_00000001', outcome: 'written' },
      { resource: 'task', id: 'TA_00000001', outcome: 'written' },
    ]);
    const w = releaseWritten(s);
    expect(w.release).toMatchObject({
      state: 'published',
      version: '0.3.0',
      createdAt: '2019-03-04T05:06:07.000000Z',
    });
    expect(w.tasks[0]).toMatchObject({
      state: 'published',
      progress: 100,
      createdAt: '2019-03-04T05:06:07.123456Z',
    });
    expect(s.highest).toEqual({ version: '0.3.0', releaseId: 'RE_00000001' });
  });

  it('refuses a release still active in the original, with its tasks, unless told what it becomes', async () => {
    for (const state of ['waiting', 'initializing', 'running', 'staged', 'publishing', 'canceling']) {
      const results = await importReleases(
        { imports: store() },
        [release(state, [task('TA_00000001', 'running')])],
        {
          dryRun: false,
        },
      );
      expect(results[0]).toMatchObject({
        outcome: 'refused',
        reason: expect.stringMatching(/still active.*--active-as/),
      });
      expect(results[1]).toMatchObject({
        resource: 'task',
        outcome: 'refused',
        reason: expect.stringMatching(/RE_00000001 is refused/),
      });
    }
  });

  it('with active_as, ends the release and its unfinished tasks in that state, keeping tasks that had ended', async () => {
    const s = store();
    const tasks = [
      task('TA_00000001', 'published'),
      task('TA_00000002', 'publishing'),
      task('TA_00000003', 'staged'),
    ];
    const results = await importReleases({ imports: s }, [release('publishing', tasks)], {
      dryRun: false,
      activeAs: 'failed',
    });
    expect(results[0]).toMatchObject({
      outcome: 'written',
      flags: ['publishing in the original; imported as failed'],
    });
    const w = releaseWritten(s);
    expect(w.release.state).toBe('failed');
    expect(w.tasks.map((t: any) => t.state)).toEqual(['published', 'failed', 'failed']);
    expect(s.highest).toBeNull();
  });

  it('maps waiting and initialized to pending, rejected to failed with an event of the task alone', async () => {
    const s = store();
    const tasks = [
      task('TA_00000001', 'rejected'),
      task('TA_00000002', 'waiting'),
      task('TA_00000003', 'initialized'),
    ];
    const results = await importReleases({ imports: s }, [release('failed', tasks)], { dryRun: false });
    const w = releaseWritten(s);
    expect(w.tasks.map((t: any) => t.state)).toEqual(['failed', 'pending', 'pending']);
    expect(w.taskEvents.get('TA_00000001')).toEqual([
      expect.objectContaining({ taskId: 'TA_00000001', taskServiceId: 'TS_00000001', eventType: 'warning' }),
    ]);
    expect(w.taskEvents.get('TA_00000001')[0].releaseId).toBeUndefined();
    expect(results[1].flags).toEqual(['rejected in the original; imported as failed']);
  });

  it('leaves out and reports a task in a state with no name here, or out of range, and flags its release', async () => {
    const s = store();
    const tasks = [
      task('TA_00000001', 'cancelled'),
      task('TA_00000002', 'canceled', { progress: 150 }),
      task('TA_00000003', 'canceled', { release: `${BASE}/releases/RE_00000009` }),
      task('TA_00000004', 'canceled'),
    ];
    const results = await importReleases({ imports: s }, [release('canceled', tasks)], { dryRun: false });
    expect(results[0].flags).toEqual(['imported without 3 refused task(s)']);
    expect(results.filter((r) => r.outcome === 'refused').map((r) => r.reason)).toEqual([
      expect.stringMatching(/unknown task state "cancelled"/),
      expect.stringMatching(/progress 150 is outside 0-100/),
      expect.stringMatching(/names release RE_00000009 but is listed under RE_00000001/),
    ]);
    expect(releaseWritten(s).tasks.map((t: any) => t.id)).toEqual(['TA_00000004']);
  });

  it('flags a task of a service that is not here and a study that is not, and imports them anyway', async () => {
    const s = new FakeImportStore();
    const results = await importReleases(
      { imports: s },
      [release('published', [task('TA_00000001', 'published')])],
      {
        dryRun: false,
      },
    );
    expect(results[0].flags).toEqual([expect.stringMatching(/study SD_00000001 is not here/)]);
    expect(results[1]).toMatchObject({
      outcome: 'written',
      flags: [expect.stringMatching(/TS_00000001 \(reports\) is not here/)],
    });
  });

  it('raises the highest published version by version order, not text order', async () => {
    const s = store();
    const raws = [
      release('published', [], { kf_id: 'RE_00000001', version: '0.9.0' }),
      release('published', [], { kf_id: 'RE_00000002', version: '0.10.0' }),
      release('canceled', [], { kf_id: 'RE_00000003', version: '0.11.0' }),
    ];
    await importReleases({ imports: s }, raws, { dryRun: false });
    expect(s.highest).toEqual({ version: '0.10.0', releaseId: 'RE_00000002' });
  });

  it('a dry run writes nothing and raises nothing, and says what a run would write', async () => {
    const s = store();
    const results = await importReleases(
      { imports: s },
      [release('published', [task('TA_00000001', 'published')])],
      {
        dryRun: true,
      },
    );
    expect(results.map((r) => r.outcome)).toEqual(['written', 'written']);
    expect(s.written).toEqual([]);
    expect(s.highest).toBeNull();
  });

  it('reports a malformed release and a repeated one, and an active release imported before as present', async () => {
    const s = store()
      .put('release', 'RE_00000002', '2019-03-04T05:06:07.000000Z')
      .put('task', 'RE_00000002#TA_00000002', null);
    const raws = [
      { kf_id: 'RE_00000009', name: 'no state' },
      release('published', []),
      release('published', []),
      release('running', [task('TA_00000002', 'running', { release: `${BASE}/releases/RE_00000002` })], {
        kf_id: 'RE_00000002',
      }),
    ];
    const results = await importReleases({ imports: s }, raws, { dryRun: false });
    expect(results).toEqual([
      {
        resource: 'release',
        id: 'RE_00000009',
        outcome: 'refused',
        reason: expect.stringMatching(/^malformed: /),
      },
      { resource: 'release', id: 'RE_00000001', outcome: 'written' },
      { resource: 'release', id: 'RE_00000001', outcome: 'present', flags: [expect.stringMatching(/twice/)] },
      {
        resource: 'release',
        id: 'RE_00000002',
        outcome: 'present',
        flags: ['still running in the original; imported before'],
      },
      { resource: 'task', id: 'TA_00000002', outcome: 'present' },
    ]);
  });
});
