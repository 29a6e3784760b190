import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import type { ReleaseState } from '#functions/coordinator/model.js';
import type { TaskState } from '#packages/task-service/src/protocol.js';
import { type CoordinatorApi, seedStudies, startCoordinatorApi } from '#test/helpers/coordinator-api.js';
import { type FakeTaskService, startFakeTaskService } from '#test/helpers/fake-task-service/index.js';

let api: CoordinatorApi;
let fake: FakeTaskService;
let repo: DynamoReleaseRepository;
const STUDIES = ['SD_AAAAAAAA', 'SD_BBBBBBBB', 'SD_CCCCCCCC'];
const services: { item_id: string; name: string }[] = [];

beforeAll(async () => {
  api = await startCoordinatorApi();
  fake = await startFakeTaskService();
  repo = new DynamoReleaseRepository(api.doc, {
    coordinator: api.tables.COORDINATOR_TABLE,
    studies: api.tables.STUDIES_TABLE,
  });
  await seedStudies(api, STUDIES);
  for (const [name, enabled] of [
    ['alpha', true],
    ['beta', true],
    ['gamma', false],
  ] as const) {
    const res = await api.call('POST', '/task-services', {
      body: { name, description: '', author: 'a', url: fake.url, enabled },
    });
    expect(res.status).toBe(200);
    if (enabled) services.push(res.body);
  }
});
afterAll(async () => {
  await fake?.stop();
  await api?.close();
});

const create = (body: Record<string, unknown> = {}) =>
  api.call('POST', '/releases', { body: { name: 'r', studies: [STUDIES[0]], ...body } });

/** Moves a release and its tasks straight in the table, as the orchestration would. */
async function force(id: string, state: ReleaseState, taskState?: TaskState) {
  const agg = await repo.load(id);
  await repo.applyChange({
    releaseId: id,
    toState: state,
    tasks: taskState ? agg?.tasks.map((t) => ({ taskId: t.id, toState: taskState })) : undefined,
  });
}

describe('POST /releases', () => {
  it('creates the release in initializing with one pending task per enabled service', async () => {
    const res = await create({
      name: 'First',
      description: 'desc',
      is_major: true,
      author: 'alice',
      tags: ['a', 'b'],
      studies: [STUDIES[1], `${api.baseUrl}/studies/${STUDIES[0]}`],
    });
    expect(res.status).toBe(200);
    const r = res.body;
    expect(r).toMatchObject({
      name: 'First',
      description: 'desc',
      is_major: true,
      author: 'alice',
      tags: ['a', 'b'],
      state: 'initializing',
      studies: [STUDIES[1], STUDIES[0]],
      notes: [],
      version: '0.0.1',
    });
    expect(Object.keys(r).sort()).toEqual(
      [
        'author',
        'created_at',
        'description',
        'is_major',
        'item_id',
        'kf_id',
        'name',
        'notes',
        'state',
        'studies',
        'tags',
        'tasks',
        'version',
      ].sort(),
    );
    expect(r.item_id).toMatch(/^RE_[0-9A-HJKMNP-TV-Z]{8}$/);
    expect(r.tasks).toHaveLength(2);
    expect(r.tasks.map((t: { service_name: string }) => t.service_name).sort()).toEqual(['alpha', 'beta']);
    for (const t of r.tasks) {
      expect(t).toMatchObject({
        state: 'pending',
        progress: 0,
        release: `${api.baseUrl}/releases/${r.item_id}`,
      });
      expect(t.task_service).toMatch(new RegExp(`^${api.baseUrl}/task-services/TS_`));
      expect(t.item_id).toMatch(/^TA_/);
    }
    const fetched = await api.call('GET', `/releases/${r.item_id}`);
    expect(fetched.body).toEqual(r);
  });

  it('writes the creation event with the release', async () => {
    const r = (await create()).body;
    const events = await api.call('GET', `/events?release=${r.item_id}`);
    expect(events.body.count).toBe(1);
    expect(events.body.results[0]).toMatchObject({
      event_type: 'info',
      release: `${api.baseUrl}/releases/${r.item_id}`,
    });
    expect(events.body.results[0].message).toContain(`release ${r.item_id}, version 0.0.1`);
  });

  it('refuses unknown studies naming the field, and writes nothing', async () => {
    const before = (await api.call('GET', '/releases?limit=1')).body.count;
    const res = await create({ studies: [STUDIES[0], 'SD_ZZZZZZZZ'] });
    expect(res.status).toBe(400);
    expect(res.body.error.fields.studies[0]).toContain('SD_ZZZZZZZZ');
    expect((await api.call('GET', '/releases?limit=1')).body.count).toBe(before);
  });

  it('requires a name and at least one well-formed study', async () => {
    const res = await api.call('POST', '/releases', { body: { studies: [] } });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['name', 'studies']);
    const bad = await create({ studies: ['not-a-study'] });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.error.fields)[0]).toMatch(/^studies/);
  });

  it('rejects read-only and unknown fields', async () => {
    const res = await create({ version: '9.9.9', state: 'published' });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.error.fields)).toContain('version');
  });

  it('answers 400, not 5xx, to a body that is not JSON', async () => {
    const res = await api.call('POST', '/releases', { body: '{"name":' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('bad_request');
  });

  it('gives the next patch after the highest published version', async () => {
    const a = (await create()).body;
    await force(a.item_id, 'published');
    await repo.applyChange({ releaseId: a.item_id, version: '1.4.0', claimVersion: '1.4.0' });
    const b = (await create()).body;
    expect(b.version).toBe('1.4.1');
  });
});

describe('GET /releases', () => {
  it('filters by state and by study (beyond the spec)', async () => {
    const r = (await create({ studies: [STUDIES[2]] })).body;
    await force(r.item_id, 'staged');
    const staged = await api.call('GET', '/releases?state=staged&limit=100');
    expect(staged.body.results.map((x: { item_id: string }) => x.item_id)).toContain(r.item_id);
    expect(staged.body.results.every((x: { state: string }) => x.state === 'staged')).toBe(true);
    const byStudy = await api.call('GET', `/releases?study=${STUDIES[2]}`);
    expect(byStudy.body.count).toBe(1);
    expect(byStudy.body.results[0].item_id).toBe(r.item_id);
    const byUrl = await api.call(
      'GET',
      `/releases?study=${encodeURIComponent(`${api.baseUrl}/studies/${STUDIES[2]}`)}`,
    );
    expect(byUrl.body.count).toBe(1);
  });

  it('400s malformed filters and answers an empty list for well-formed unknown ids', async () => {
    expect((await api.call('GET', '/releases?state=bogus')).status).toBe(400);
    expect((await api.call('GET', '/releases?study=nope')).status).toBe(400);
    const none = await api.call('GET', '/releases?study=SD_ZZZZZZZZ');
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ count: 0, next: null, previous: null, results: [] });
  });

  it('pages newest first with absolute next/previous links that keep the filters', async () => {
    for (let i = 0; i < 3; i++) await create({ name: `page-${i}`, studies: [STUDIES[1]] });
    const first = await api.call('GET', `/releases?study=${STUDIES[1]}&limit=2`);
    expect(first.status).toBe(200);
    const count = first.body.count;
    expect(count).toBeGreaterThanOrEqual(3);
    expect(first.body.results).toHaveLength(2);
    expect(first.body.previous).toBeNull();
    // The next link keeps the filters and carries a cursor, so following it costs one page.
    expect(first.body.next).toMatch(/&cursor=[\w-]+$/);
    expect(first.body.next.replace(/&cursor=[\w-]+$/, '')).toBe(
      `${api.baseUrl}/releases?study=${STUDIES[1]}&limit=2&offset=2`,
    );
    const second = await api.call('GET', first.body.next.slice(api.baseUrl.length));
    expect(second.body.previous).toBe(`${api.baseUrl}/releases?study=${STUDIES[1]}&limit=2&offset=0`);
    const all = [...first.body.results, ...second.body.results];
    const dates = all.map((r: { created_at: string }) => r.created_at);
    expect(dates).toEqual([...dates].sort().reverse());
    expect(new Set(all.map((r: { item_id: string }) => r.item_id)).size).toBe(all.length);
  });

  it('handles the pagination edges: offset past the end, limit 0, 101 and abc, default 10', async () => {
    const past = await api.call('GET', '/releases?offset=1000');
    expect(past.status).toBe(200);
    expect(past.body.results).toEqual([]);
    expect(past.body.next).toBeNull();
    expect(past.body.previous).toMatch(/offset=/);
    for (const limit of ['0', '101', 'abc', '-1']) {
      const res = await api.call('GET', `/releases?limit=${limit}`);
      expect(res.status).toBe(400);
      expect(res.body.error.fields.limit).toBeDefined();
    }
    expect((await api.call('GET', '/releases?offset=x')).status).toBe(400);
    expect((await api.call('GET', '/releases?limit=100')).status).toBe(200);
    for (let i = 0; i < 11; i++) await create({ name: `bulk-${i}` });
    const def = await api.call('GET', '/releases');
    expect(def.body.results).toHaveLength(10);
    expect(def.body.next).toContain('limit=10&offset=10');
  });
});

describe('PATCH /releases/<id>', () => {
  it('changes name, description and tags only', async () => {
    const r = (await create()).body;
    const res = await api.call('PATCH', `/releases/${r.item_id}`, {
      body: { name: 'new', description: 'changed', tags: ['x'] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: 'new',
      description: 'changed',
      tags: ['x'],
      state: 'initializing',
    });
    expect(res.body.tasks).toHaveLength(2);
    const refused = await api.call('PATCH', `/releases/${r.item_id}`, { body: { state: 'published' } });
    expect(refused.status).toBe(400);
    expect((await api.call('PATCH', '/releases/RE_00000000', { body: { name: 'x' } })).status).toBe(404);
  });
});

describe('DELETE /releases/<id> and POST /releases/<id>/publish', () => {
  it('cancels: 200 with the release in canceling, again while canceling, 409 once terminal', async () => {
    const r = (await create()).body;
    const res = await api.call('DELETE', `/releases/${r.item_id}`);
    expect(res.status).toBe(200);
    expect(res.body.item_id).toBe(r.item_id);
    expect(res.body.state).toBe('canceling');
    expect((await api.call('GET', `/releases/${r.item_id}`)).body.state).toBe('canceling');
    expect((await api.call('DELETE', `/releases/${r.item_id}`)).status).toBe(200);
    const events = (await api.call('GET', `/events?release=${r.item_id}`)).body.results;
    expect(events.map((e: { message: string }) => e.message)).toContain(
      `release ${r.item_id}, version ${r.version} changed from initializing to canceling`,
    );
    await force(r.item_id, 'canceled');
    const terminal = await api.call('DELETE', `/releases/${r.item_id}`);
    expect(terminal.status).toBe(409);
    expect(terminal.body.error.code).toBe('conflict');
    expect((await api.call('DELETE', '/releases/RE_00000000')).status).toBe(404);
  });

  it('cancels a publishing release only with confirm_published=true; the 409 names what has published', async () => {
    const r = (await create()).body;
    expect(r.tasks.length).toBeGreaterThan(0);
    await force(r.item_id, 'publishing', 'published');
    const refused = await api.call('DELETE', `/releases/${r.item_id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('confirmation_required');
    const named = r.tasks.map((t: any) => ({
      task_id: t.item_id,
      task_service_id: t.task_service.split('/').pop(),
      service_name: t.service_name,
    }));
    expect(refused.body.error.published).toEqual(named);
    expect(refused.body.error.publishing).toEqual([]);
    for (const t of named) expect(refused.body.error.message).toContain(t.task_id);
    expect(refused.body.error.message).toContain('confirm_published=true');
    expect((await api.call('DELETE', `/releases/${r.item_id}?confirm_published=false`)).status).toBe(409);
    const bad = await api.call('DELETE', `/releases/${r.item_id}?confirm_published=yes`);
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.error.fields)).toEqual(['confirm_published']);
    expect((await api.call('GET', `/releases/${r.item_id}`)).body.state).toBe('publishing');
    const confirmed = await api.call('DELETE', `/releases/${r.item_id}?confirm_published=True`);
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.state).toBe('canceling');
    // The confirmation may also come as a JSON body, for clients that send DELETE with one.
    const byBody = (await create()).body;
    await force(byBody.item_id, 'publishing', 'published');
    const notConfirmed = await api.call('DELETE', `/releases/${byBody.item_id}`, {
      body: { confirm_published: false },
    });
    expect(notConfirmed.status).toBe(409);
    const bodyConfirmed = await api.call('DELETE', `/releases/${byBody.item_id}`, {
      body: { confirm_published: true },
    });
    expect(bodyConfirmed.status).toBe(200);
    expect(bodyConfirmed.body.state).toBe('canceling');
    // In any other state the flag changes nothing.
    const other = (await create()).body;
    expect((await api.call('DELETE', `/releases/${other.item_id}?confirm_published=true`)).status).toBe(200);
  });

  it('publishes only a staged release, admin only', async () => {
    const r = (await create()).body;
    const early = await api.call('POST', `/releases/${r.item_id}/publish`);
    expect(early.status).toBe(409);
    await force(r.item_id, 'staged', 'staged');
    const asService = await api.call('POST', `/releases/${r.item_id}/publish`, { token: api.idp.service() });
    expect(asService.status).toBe(403);
    const res = await api.call('POST', `/releases/${r.item_id}/publish`);
    expect(res.status).toBe(200);
    expect(typeof res.body.message).toBe('string');
    expect((await api.call('GET', `/releases/${r.item_id}`)).body.state).toBe('publishing');
    expect((await api.call('POST', `/releases/${r.item_id}/publish`)).status).toBe(409);
    expect((await api.call('POST', '/releases/RE_00000000/publish')).status).toBe(404);
  });

  it('lets exactly one of two concurrent publishes win', async () => {
    const r = (await create()).body;
    await force(r.item_id, 'staged', 'staged');
    const results = await Promise.all([
      api.call('POST', `/releases/${r.item_id}/publish`),
      api.call('POST', `/releases/${r.item_id}/publish`),
    ]);
    expect(results.map((x) => x.status).sort()).toEqual([200, 409]);
  });
});

describe('tasks', () => {
  it('GET /tasks/<id> resolves the task URLs of a release', async () => {
    const r = (await create()).body;
    for (const t of r.tasks) {
      const res = await api.call(
        'GET',
        t.release.replace(api.baseUrl, '').replace(/\/releases\/.*/, `/tasks/${t.item_id}`),
      );
      expect(res.status).toBe(200);
      expect(res.body).toEqual(t);
    }
    expect((await api.call('GET', '/tasks/TA_00000000')).status).toBe(404);
  });

  it('filters tasks by release, task_service and state', async () => {
    const r = (await create()).body;
    const byRelease = await api.call('GET', `/tasks?release=${r.item_id}`);
    expect(byRelease.body.count).toBe(2);
    const svc = services[0].item_id;
    const both = await api.call('GET', `/tasks?release=${r.item_id}&task_service=${svc}`);
    expect(both.body.count).toBe(1);
    expect(both.body.results[0].service_name).toBe('alpha');
    const byService = await api.call('GET', `/tasks?task_service=${svc}&limit=100`);
    expect(byService.body.results.every((t: { task_service: string }) => t.task_service.endsWith(svc))).toBe(
      true,
    );
    const pending = await api.call('GET', `/tasks?state=pending&limit=5`);
    expect(pending.body.results.every((t: { state: string }) => t.state === 'pending')).toBe(true);
    expect(pending.body.results).toHaveLength(5);
    expect(pending.body.next).toContain('state=pending');
    expect((await api.call('GET', '/tasks?state=waiting')).status).toBe(400);
    expect((await api.call('GET', '/tasks?task_service=blah')).status).toBe(400);
    expect((await api.call('GET', '/tasks?release=RE_ZZZZZZZZ')).body.count).toBe(0);
  });

  it('PATCH /tasks/<id> moves along valid transitions, stores "50%" as 50, refuses others with 409', async () => {
    const r = (await create()).body;
    const id = r.tasks[0].item_id;
    const svc = api.idp.service();
    const run = await api.call('PATCH', `/tasks/${id}`, {
      token: svc,
      body: { state: 'running', progress: '50%' },
    });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ state: 'running', progress: 50 });
    const again = await api.call('PATCH', `/tasks/${id}`, {
      token: svc,
      body: { state: 'running', progress: 60 },
    });
    expect(again.status).toBe(200);
    expect(again.body.progress).toBe(60);
    const back = await api.call('PATCH', `/tasks/${id}`, { token: svc, body: { state: 'pending' } });
    expect(back.status).toBe(409);
    const staged = await api.call('PATCH', `/tasks/${id}`, {
      token: svc,
      body: { state: 'staged', progress: 100 },
    });
    expect(staged.body.state).toBe('staged');
    const events = (await api.call('GET', `/events?task=${id}`)).body.results.map(
      (e: { message: string }) => e.message,
    );
    expect(events).toContain(`task ${id} changed from pending to running`);
    expect(events).toContain(`task ${id} changed from running to staged`);
    expect((await api.call('PATCH', `/tasks/${id}`, { token: svc, body: { progress: 101 } })).status).toBe(
      400,
    );
    expect((await api.call('PATCH', `/tasks/${id}`, { token: svc, body: { progress: 'half' } })).status).toBe(
      400,
    );
    expect((await api.call('PATCH', `/tasks/${id}`, { token: svc, body: { state: 'done' } })).status).toBe(
      400,
    );
    expect((await api.call('PATCH', `/tasks/${id}`, { token: svc, body: { colour: 1 } })).status).toBe(400);
    expect(
      (await api.call('PATCH', '/tasks/TA_00000000', { token: svc, body: { progress: 1 } })).status,
    ).toBe(404);
  });

  it('refuses DELETE /tasks with 405 and an Allow header', async () => {
    const res = await api.call('DELETE', '/tasks/TA_00000000');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, PATCH');
  });
});

describe('DELETE /task-services/<id> with tasks', () => {
  it('answers 409 while a task is in a non-terminal release, and deletes once it is terminal', async () => {
    const svc = (
      await api.call('POST', '/task-services', {
        body: { name: 'temp', description: '', author: '', url: fake.url },
      })
    ).body;
    const r = (await create()).body;
    const mine = r.tasks.find((t: { service_name: string }) => t.service_name === 'temp');
    expect(mine).toBeDefined();
    const busy = await api.call('DELETE', `/task-services/${svc.item_id}`);
    expect(busy.status).toBe(409);
    expect(busy.body.error.message).toContain(r.item_id);
    await force(r.item_id, 'canceled', 'canceled');
    const done = await api.call('DELETE', `/task-services/${svc.item_id}`);
    expect(done.status).toBe(200);
    // History keeps the service's name on the task.
    const task = await api.call('GET', `/tasks/${mine.item_id}`);
    expect(task.body.service_name).toBe('temp');
  });
});
