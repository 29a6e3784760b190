import { describe, expect, it } from 'vitest';
import { importEvents, importNotes } from '#functions/coordinator/import/history.js';
import { FakeImportStore } from './fake-store.js';

const BASE = 'https://original.example.org';
const event = (n: number, extra: Record<string, unknown> = {}) => ({
  kf_id: `EV_0000000${n}`,
  event_type: 'info',
  message: `event ${n}`,
  release: `${BASE}/releases/RE_00000001`,
  task_service: `${BASE}/task-services/TS_00000001`,
  task: `${BASE}/tasks/TA_00000001`,
  created_at: `2019-05-0${n}T00:00:00.000001Z`,
  ...extra,
});
const here = () =>
  new FakeImportStore()
    .put('release', 'RE_00000001', null)
    .put('task', 'RE_00000001#TA_00000001', null)
    .put('task_service', 'TS_00000001', null);

describe('importing events', () => {
  it('writes an event whose release and task are here, keeping its id, time and `original` source', async () => {
    const s = here();
    expect(await importEvents({ imports: s }, [event(1)], false)).toEqual([
      { resource: 'event', id: 'EV_00000001', outcome: 'written' },
    ]);
    expect(s.written[0].value).toEqual({
      event: {
        id: 'EV_00000001',
        eventType: 'info',
        message: 'event 1',
        releaseId: 'RE_00000001',
        taskId: 'TA_00000001',
        taskServiceId: 'TS_00000001',
        studyId: null,
        source: 'original',
        createdAt: '2019-05-01T00:00:00.000001Z',
      },
    });
  });

  it('refuses an event whose release or task is not here, and flags one whose task service is not', async () => {
    const s = here();
    const results = await importEvents(
      { imports: s },
      [
        event(1, { release: `${BASE}/releases/RE_00000009` }),
        event(2, { task: `${BASE}/tasks/TA_00000009` }),
        event(3, { task_service: `${BASE}/task-services/TS_00000009` }),
      ],
      false,
    );
    expect(results).toEqual([
      expect.objectContaining({
        outcome: 'refused',
        reason: expect.stringMatching(/release RE_00000009 is not here/),
      }),
      expect.objectContaining({
        outcome: 'refused',
        reason: 'task TA_00000009 is not a task of release RE_00000001 here',
      }),
      expect.objectContaining({ outcome: 'written', flags: ['task service TS_00000009 is not here'] }),
    ]);
  });

  it("finds the release of a task named alone, which the event's keys need", async () => {
    const s = here();
    await importEvents({ imports: s }, [event(1, { release: null })], false);
    expect(s.written[0].value).toMatchObject({ taskReleaseId: 'RE_00000001', event: { releaseId: null } });
  });

  it('answers an event imported before from one read, looking nothing else up', async () => {
    const s = here().put('event', 'EV_00000001', '2019-05-01T00:00:00.000001Z');
    expect(await importEvents({ imports: s }, [event(1)], false)).toEqual([
      { resource: 'event', id: 'EV_00000001', outcome: 'present' },
    ]);
    expect(s.lookups).toEqual(['here:event']);
  });

  it('refuses an event whose id another event holds, and a repeat in one batch is written once', async () => {
    const s = here().put('event', 'EV_00000001', '2020-01-01T00:00:00.000000Z');
    const results = await importEvents({ imports: s }, [event(1), event(2), event(2)], false);
    expect(results).toEqual([
      expect.objectContaining({
        outcome: 'refused',
        reason: expect.stringMatching(/belongs to another record/),
      }),
      { resource: 'event', id: 'EV_00000002', outcome: 'written' },
      expect.objectContaining({ id: 'EV_00000002', outcome: 'present' }),
    ]);
  });

  it('judges no reference in a dry run, where what the run would write is not here yet', async () => {
    const s = new FakeImportStore();
    expect(await importEvents({ imports: s }, [event(1)], true)).toEqual([
      { resource: 'event', id: 'EV_00000001', outcome: 'written' },
    ]);
    expect(s.written).toEqual([]);
    expect(s.lookups).toEqual(['here:event']);
  });
});

describe('importing release notes', () => {
  const note = (extra: Record<string, unknown> = {}) => ({
    kf_id: 'RN_00000001',
    description: 'what changed',
    author: 'admin',
    created_at: '2019-05-01T00:00:00Z',
    release: `${BASE}/releases/RE_00000001`,
    study: `${BASE}/studies/SD_00000001`,
    ...extra,
  });

  it('writes a note of a release that is here, flags a study that is not, refuses a note of a missing release', async () => {
    const s = here();
    const results = await importNotes(
      { imports: s },
      [note(), note({ kf_id: 'RN_00000002', release: 'RE_00000002' })],
      false,
    );
    expect(results).toEqual([
      {
        resource: 'release_note',
        id: 'RN_00000001',
        outcome: 'written',
        flags: ['study SD_00000001 is not here'],
      },
      expect.objectContaining({
        outcome: 'refused',
        reason: expect.stringMatching(/release RE_00000002 is not here/),
      }),
    ]);
    expect(s.written[0].value).toMatchObject({
      releaseId: 'RE_00000001',
      studyId: 'SD_00000001',
      createdAt: '2019-05-01T00:00:00.000000Z',
    });
  });
});
