import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CoordinatorApi, seedStudies, startCoordinatorApi } from '#test/helpers/coordinator-api.js';
import { type FakeTaskService, startFakeTaskService } from '#test/helpers/fake-task-service/index.js';

let api: CoordinatorApi;
let fake: FakeTaskService;
const S1 = 'SD_11111111';
const S2 = 'SD_22222222';
let release: any;
let other: any;
let service: any;

beforeAll(async () => {
  api = await startCoordinatorApi();
  fake = await startFakeTaskService();
  await seedStudies(api, [S1, S2]);
  service = (
    await api.call('POST', '/task-services', {
      body: { name: 'svc', description: '', author: '', url: fake.url },
    })
  ).body;
  release = (await api.call('POST', '/releases', { body: { name: 'r1', studies: [S1, S2] } })).body;
  other = (await api.call('POST', '/releases', { body: { name: 'r2', studies: [S2] } })).body;
});
afterAll(async () => {
  await fake?.stop();
  await api?.close();
});

describe('release notes', () => {
  it('creates a note (bare ids or URLs), embeds it in its release and reads it back', async () => {
    const res = await api.call('POST', '/release-notes', {
      body: {
        description: 'changes',
        author: 'bob',
        release: `${api.baseUrl}/releases/${release.item_id}`,
        study: S1,
      },
    });
    expect(res.status).toBe(200);
    const note = res.body;
    expect(note).toMatchObject({
      description: 'changes',
      author: 'bob',
      release: `${api.baseUrl}/releases/${release.item_id}`,
      study: `${api.baseUrl}/studies/${S1}`,
    });
    expect(note.item_id).toMatch(/^RN_/);
    expect(note.results).toEqual([
      Object.fromEntries(
        Object.entries(note).filter(([k]) => !['count', 'next', 'previous', 'results'].includes(k)),
      ),
    ]);
    const got = await api.call('GET', `/release-notes/${note.item_id}`);
    expect(got.status).toBe(200);
    expect(Object.keys(got.body).sort()).toEqual(
      ['author', 'created_at', 'description', 'item_id', 'kf_id', 'release', 'study'].sort(),
    );
    const r = await api.call('GET', `/releases/${release.item_id}`);
    expect(r.body.notes).toEqual([got.body]);
  });

  it('study is optional; release is required and must exist, as must a given study', async () => {
    const noStudy = await api.call('POST', '/release-notes', {
      body: { description: 'x', release: release.item_id },
    });
    expect(noStudy.status).toBe(200);
    expect(noStudy.body.study).toBeNull();
    const noRelease = await api.call('POST', '/release-notes', { body: { description: 'x' } });
    expect(noRelease.status).toBe(400);
    expect(noRelease.body.error.fields.release).toBeDefined();
    const unknownRelease = await api.call('POST', '/release-notes', {
      body: { description: 'x', release: 'RE_ZZZZZZZZ' },
    });
    expect(unknownRelease.status).toBe(400);
    expect(unknownRelease.body.error.fields.release[0]).toContain('RE_ZZZZZZZZ');
    const unknownStudy = await api.call('POST', '/release-notes', {
      body: { description: 'x', release: release.item_id, study: 'SD_ZZZZZZZZ' },
    });
    expect(unknownStudy.status).toBe(400);
    expect(unknownStudy.body.error.fields.study).toBeDefined();
  });

  it('patches fields, moves a note to another release, clears its study', async () => {
    const note = (
      await api.call('POST', '/release-notes', {
        body: { description: 'a', release: release.item_id, study: S1 },
      })
    ).body;
    const patched = await api.call('PATCH', `/release-notes/${note.item_id}`, {
      body: { description: 'b', author: 'carol', release: other.item_id, study: null },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      item_id: note.item_id,
      description: 'b',
      author: 'carol',
      release: `${api.baseUrl}/releases/${other.item_id}`,
      study: null,
      created_at: note.created_at,
    });
    const moved = await api.call('GET', `/releases/${other.item_id}`);
    expect(moved.body.notes.map((n: { item_id: string }) => n.item_id)).toContain(note.item_id);
    const left = await api.call('GET', `/releases/${release.item_id}`);
    expect(left.body.notes.map((n: { item_id: string }) => n.item_id)).not.toContain(note.item_id);
    const bad = await api.call('PATCH', `/release-notes/${note.item_id}`, {
      body: { release: 'RE_ZZZZZZZZ' },
    });
    expect(bad.status).toBe(400);
    expect(
      (await api.call('PATCH', '/release-notes/RN_00000000', { body: { description: 'x' } })).status,
    ).toBe(404);
  });

  it('filters by release and study, and 400s malformed filter ids', async () => {
    const n1 = (
      await api.call('POST', '/release-notes', {
        body: { description: 'f1', release: other.item_id, study: S2 },
      })
    ).body;
    const byRelease = await api.call('GET', `/release-notes?release=${other.item_id}&limit=100`);
    expect(byRelease.body.results.every((n: { release: string }) => n.release.endsWith(other.item_id))).toBe(
      true,
    );
    const byStudy = await api.call('GET', `/release-notes?study=${S2}`);
    expect(byStudy.body.results.map((n: { item_id: string }) => n.item_id)).toContain(n1.item_id);
    expect(byStudy.body.results.every((n: { study: string }) => n.study.endsWith(S2))).toBe(true);
    const both = await api.call('GET', `/release-notes?release=${release.item_id}&study=${S2}`);
    expect(both.body.count).toBe(0);
    expect((await api.call('GET', '/release-notes?release=abc')).status).toBe(400);
    expect((await api.call('GET', '/release-notes?study=SD_ZZZZZZZZ')).body.count).toBe(0);
  });

  it('deletes a note with 200 and an empty body, then 404s it', async () => {
    const note = (
      await api.call('POST', '/release-notes', { body: { description: 'd', release: release.item_id } })
    ).body;
    const res = await api.call('DELETE', `/release-notes/${note.item_id}`);
    expect(res.status).toBe(200);
    expect(res.text).toBe('');
    expect((await api.call('GET', `/release-notes/${note.item_id}`)).status).toBe(404);
    expect((await api.call('DELETE', `/release-notes/${note.item_id}`)).status).toBe(404);
  });
});

describe('events', () => {
  it('creates an event with every reference (ids or URLs) and answers the spec shape without study', async () => {
    const task = release.tasks[0];
    const res = await api.call('POST', '/events', {
      token: api.idp.service(),
      body: {
        event_type: 'warning',
        message: 'hello',
        release: release.item_id,
        task: `${api.baseUrl}/tasks/${task.item_id}`,
        task_service: service.item_id,
        study: S1,
      },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      event_type: 'warning',
      message: 'hello',
      release: `${api.baseUrl}/releases/${release.item_id}`,
      task: `${api.baseUrl}/tasks/${task.item_id}`,
      task_service: `${api.baseUrl}/task-services/${service.item_id}`,
    });
    expect(Object.keys(res.body).sort()).toEqual(
      [
        'created_at',
        'event_type',
        'item_id',
        'kf_id',
        'message',
        'release',
        'source',
        'task',
        'task_service',
      ].sort(),
    );
    expect(res.body.item_id).toMatch(/^EV_/);
    const got = await api.call('GET', `/events/${res.body.item_id}`);
    expect(got.body).toEqual(res.body);
  });

  it('accepts a task without its release, and nulls for absent references', async () => {
    const task = release.tasks[0];
    const res = await api.call('POST', '/events', {
      body: { event_type: 'info', message: 'm', task: task.item_id },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      release: null,
      task_service: null,
      task: `${api.baseUrl}/tasks/${task.item_id}`,
    });
  });

  it('refuses references to records that do not exist, naming each field, and writes nothing', async () => {
    const before = (await api.call('GET', '/events?limit=1')).body.count;
    for (const [field, value] of [
      ['release', 'RE_ZZZZZZZZ'],
      ['study', 'SD_ZZZZZZZZ'],
      ['task', 'TA_ZZZZZZZZ'],
      ['task_service', 'TS_ZZZZZZZZ'],
    ]) {
      const res = await api.call('POST', '/events', {
        body: { event_type: 'info', message: 'm', [field]: value },
      });
      expect(res.status).toBe(400);
      expect(Object.keys(res.body.error.fields)).toEqual([field]);
    }
    // A task of another release is not that release's task.
    const mismatch = await api.call('POST', '/events', {
      body: { event_type: 'info', message: 'm', release: other.item_id, task: release.tasks[0].item_id },
    });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.error.fields.task).toBeDefined();
    expect((await api.call('GET', '/events?limit=1')).body.count).toBe(before);
  });

  it('validates event_type and message', async () => {
    const res = await api.call('POST', '/events', { body: { event_type: 'debug', message: 1 } });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['event_type', 'message']);
  });

  it('filters by release, study, task and task_service', async () => {
    const task = other.tasks[0];
    const e = (
      await api.call('POST', '/events', {
        body: {
          message: 'filtered',
          release: other.item_id,
          study: S2,
          task: task.item_id,
          task_service: service.item_id,
        },
      })
    ).body;
    for (const q of [
      `release=${other.item_id}`,
      `study=${S2}`,
      `task=${task.item_id}`,
      `task_service=${service.item_id}`,
      `release=${other.item_id}&study=${S2}&task=${task.item_id}&task_service=${service.item_id}`,
    ]) {
      const res = await api.call('GET', `/events?${q}&limit=100`);
      expect(res.status).toBe(200);
      expect(res.body.results.map((x: { item_id: string }) => x.item_id)).toContain(e.item_id);
    }
    expect((await api.call('GET', `/events?study=${S1}&task=${task.item_id}`)).body.count).toBe(0);
    for (const q of ['release=x', 'study=SD_1', 'task=RE_00000000', 'task_service=TS_']) {
      expect((await api.call('GET', `/events?${q}`)).status).toBe(400);
    }
  });

  it('deletes an event (admin) with an empty 200; service may create but not delete', async () => {
    const e = (await api.call('POST', '/events', { token: api.idp.service(), body: { message: 'bye' } }))
      .body;
    expect((await api.call('DELETE', `/events/${e.item_id}`, { token: api.idp.service() })).status).toBe(403);
    const res = await api.call('DELETE', `/events/${e.item_id}`);
    expect(res.status).toBe(200);
    expect(res.text).toBe('');
    expect((await api.call('GET', `/events/${e.item_id}`)).status).toBe(404);
    expect((await api.call('DELETE', `/events/${e.item_id}`)).status).toBe(404);
  });

  it('lists newest first across pages', async () => {
    const res = await api.call('GET', '/events?limit=3');
    const p2 = await api.call('GET', '/events?limit=3&offset=3');
    const dates = [...res.body.results, ...p2.body.results].map((e: { created_at: string }) => e.created_at);
    expect(dates).toEqual([...dates].sort().reverse());
  });
});
