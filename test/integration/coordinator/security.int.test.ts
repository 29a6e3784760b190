import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CoordinatorApi, seedStudies, startCoordinatorApi } from '#test/helpers/coordinator-api.js';
import { type FakeTaskService, startFakeTaskService } from '#test/helpers/fake-task-service/index.js';

/**
 * The coordinator's security rules over real HTTP: task services bound to the identity of their OAuth client,
 * the coordinator's own outgoing token refused by its API, events written by clients marked as such, and bounded
 * input that never ends in a 500.
 */
let api: CoordinatorApi;
let fake: FakeTaskService;
const STUDY = 'SD_SEC00001';

/** A task service registered with `client_id` (or unbound), and the pending task it got in a fresh release. */
async function serviceWithTask(clientId: string | null) {
  const reg = await api.call('POST', '/task-services', {
    body: {
      name: `svc-${clientId ?? 'unbound'}`,
      url: fake.url,
      ...(clientId === null ? {} : { client_id: clientId }),
    },
  });
  expect(reg.status).toBe(200);
  return reg.body.item_id as string;
}

async function releaseTasks(): Promise<Map<string, string>> {
  const rel = await api.call('POST', '/releases', { body: { name: 'r', studies: [STUDY] } });
  expect(rel.status).toBe(200);
  const byService = new Map<string, string>();
  for (const t of rel.body.tasks) byService.set(String(t.task_service).split('/').at(-1) ?? '', t.item_id);
  return byService;
}

beforeAll(async () => {
  api = await startCoordinatorApi();
  fake = await startFakeTaskService({ name: 'security' });
  await seedStudies(api, [STUDY]);
});
afterAll(async () => {
  await fake?.stop();
  await api?.close();
});

describe('task services bound to an OAuth client', () => {
  let boundA: string;
  let unbound: string;
  let tasks: Map<string, string>;
  beforeAll(async () => {
    boundA = await serviceWithTask('client-a');
    unbound = await serviceWithTask(null);
    tasks = await releaseTasks();
  });

  it('stores client_id on registration and answers it, or null when unbound', async () => {
    expect((await api.call('GET', `/task-services/${boundA}`)).body.client_id).toBe('client-a');
    expect((await api.call('GET', `/task-services/${unbound}`)).body.client_id).toBeNull();
    const patched = await api.call('PATCH', `/task-services/${unbound}`, { body: { client_id: 'client-u' } });
    expect(patched.status).toBe(200);
    expect(patched.body.client_id).toBe('client-u');
    const cleared = await api.call('PATCH', `/task-services/${unbound}`, { body: { client_id: null } });
    expect(cleared.body.client_id).toBeNull();
  });

  it('refuses PATCH /tasks/<id> from a service token of another identity with 403', async () => {
    const taskId = tasks.get(boundA) as string;
    const other = api.idp.mint({ sub: 'someone', roles: ['service'], extra: { client_id: 'client-b' } });
    const res = await api.call('PATCH', `/tasks/${taskId}`, { token: other, body: { progress: 10 } });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('forbidden');
    const stored = await api.call('GET', `/tasks/${taskId}`);
    expect(stored.body.progress).toBe(0);
  });

  it('accepts PATCH /tasks/<id> from the bound client (client_id claim, else sub) and from an admin', async () => {
    const taskId = tasks.get(boundA) as string;
    const byClaim = api.idp.mint({ sub: 'x', roles: ['service'], extra: { client_id: 'client-a' } });
    expect(
      (await api.call('PATCH', `/tasks/${taskId}`, { token: byClaim, body: { progress: 20 } })).status,
    ).toBe(200);
    const bySub = api.idp.mint({ sub: 'client-a', roles: ['service'] });
    expect(
      (await api.call('PATCH', `/tasks/${taskId}`, { token: bySub, body: { progress: 30 } })).status,
    ).toBe(200);
    expect((await api.call('PATCH', `/tasks/${taskId}`, { body: { progress: 40 } })).status).toBe(200);
  });

  it('keeps the spec behaviour for a task of an unbound service: any service token may report', async () => {
    const fresh = await serviceWithTask(null);
    const t = await releaseTasks();
    const res = await api.call('PATCH', `/tasks/${t.get(fresh)}`, {
      token: api.idp.service(),
      body: { progress: 5 },
    });
    expect(res.status).toBe(200);
  });

  it('refuses POST /events naming a task or a task service bound to another identity with 403', async () => {
    const other = api.idp.mint({ sub: 'client-b', roles: ['service'] });
    const before = (await api.call('GET', '/events?limit=1')).body.count;
    const byTask = await api.call('POST', '/events', {
      token: other,
      body: { message: 'hello', task: tasks.get(boundA) },
    });
    expect(byTask.status).toBe(403);
    const byService = await api.call('POST', '/events', {
      token: other,
      body: { message: 'hello', task_service: boundA },
    });
    expect(byService.status).toBe(403);
    expect((await api.call('GET', '/events?limit=1')).body.count).toBe(before);
    const own = api.idp.mint({ sub: 'client-a', roles: ['service'] });
    const ok = await api.call('POST', '/events', {
      token: own,
      body: { message: 'hello', task_service: boundA },
    });
    expect(ok.status).toBe(200);
  });

  /** A task service's own app client as Cognito issues it: an access token with no aud, the scope and its id. */
  const ownClient = (clientId: string) =>
    api.idp.mint({
      sub: clientId,
      roles: [],
      extra: { aud: undefined, token_use: 'access', scope: 'coordinator/service', client_id: clientId },
    });

  it("lets a service read its own tasks, with its own client's token or a service token bound to it", async () => {
    const taskId = tasks.get(boundA) as string;
    const bound = api.idp.mint({ sub: 'x', roles: ['service'], extra: { client_id: 'client-a' } });
    for (const token of [ownClient('client-a'), bound]) {
      const one = await api.call('GET', `/tasks/${taskId}`, { token });
      expect(one.status).toBe(200);
      expect(one.body.item_id).toBe(taskId);
      const mine = await api.call('GET', `/tasks?task_service=${boundA}&limit=100`, { token });
      expect(mine.status).toBe(200);
      expect(mine.body.results.map((t: { item_id: string }) => t.item_id)).toContain(taskId);
      for (const t of mine.body.results) expect(String(t.task_service)).toMatch(new RegExp(`/${boundA}$`));
    }
  });

  it("refuses a service's token another service's task, and its own client a list that names no service", async () => {
    const bTask = (await releaseTasks()).get(unbound) as string;
    const boundB = await serviceWithTask('client-b');
    const bBound = (await releaseTasks()).get(boundB) as string;
    const own = ownClient('client-a');
    // Its own client reads only the service bound to it: not an unbound one, not another's, not a list of all.
    for (const path of [`/tasks/${bTask}`, `/tasks/${bBound}`, `/tasks?task_service=${boundB}`, '/tasks']) {
      const res = await api.call('GET', path, { token: own });
      expect(res.status, path).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
    // A service token bound to client-a reads no task of a service bound to another client.
    const bound = api.idp.mint({ sub: 'x', roles: ['service'], extra: { client_id: 'client-a' } });
    expect((await api.call('GET', `/tasks/${bBound}`, { token: bound })).status).toBe(403);
    expect((await api.call('GET', `/tasks?task_service=${boundB}`, { token: bound })).status).toBe(403);
    // A client that no service is bound to reads nothing with such a token; an admin reads everything.
    expect(
      (await api.call('GET', `/tasks/${tasks.get(boundA)}`, { token: ownClient('client-z') })).status,
    ).toBe(403);
    expect((await api.call('GET', `/tasks/${bBound}`)).status).toBe(200);
  });

  it('refuses the token the coordinator sends to task services when it is replayed against the coordinator', async () => {
    fake.requests.length = 0;
    await serviceWithTask('client-replay');
    const sent = fake.requests.find((r) => r.path === '/status')?.headers.authorization;
    expect(sent).toMatch(/^Bearer /);
    const token = String(sent).replace(/^Bearer /, '');
    for (const [method, path, body] of [
      ['GET', '/releases', undefined],
      ['POST', '/events', { message: 'replayed' }],
      ['PATCH', `/tasks/${tasks.get(boundA)}`, { progress: 99 }],
    ] as const) {
      const res = await api.call(method, path, { token, body });
      expect([401, 403]).toContain(res.status);
    }
  });
});

describe("a task service's own client writes for its own service only", () => {
  let own: string;
  let unbound: string;
  let boundB: string;
  let gone: string;
  let tasks: Map<string, string>;
  /** A Cognito client-credentials access token: no `aud`, the task services' scope, the client's id. */
  const ownToken = (clientId: string) =>
    api.idp.mint({
      sub: clientId,
      extra: { aud: undefined, token_use: 'access', scope: 'coordinator/service', client_id: clientId },
    });
  beforeAll(async () => {
    own = await serviceWithTask('own-a');
    unbound = await serviceWithTask(null);
    boundB = await serviceWithTask('own-b');
    gone = await serviceWithTask(null);
    tasks = await releaseTasks();
    // A service deleted while its task is still around (a delete racing the release), straight from the table.
    await api.doc.send(
      new DeleteCommand({ TableName: api.tables.COORDINATOR_TABLE, Key: { pk: `TS#${gone}`, sk: 'TS' } }),
    );
  });

  it.each([
    ['a service without a client', () => unbound],
    ['a service bound to another client', () => boundB],
    ['a deleted service', () => gone],
  ])('refuses its PATCH /tasks/<id> of %s with 403, for a state and for progress', async (_, service) => {
    const taskId = tasks.get(service()) as string;
    for (const body of [{ state: 'staged', progress: 100 }, { progress: 50 }]) {
      const res = await api.call('PATCH', `/tasks/${taskId}`, { token: ownToken('own-a'), body });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
    const stored = await api.call('GET', `/tasks/${taskId}`);
    expect(stored.body).toMatchObject({ state: 'pending', progress: 0 });
  });

  it('refuses a no-op PATCH /tasks/<id> of another service with 403 before answering the task', async () => {
    for (const service of [unbound, boundB]) {
      const taskId = tasks.get(service) as string;
      for (const body of [{ state: 'pending' }, { progress: 0 }]) {
        const res = await api.call('PATCH', `/tasks/${taskId}`, { token: ownToken('own-a'), body });
        expect(res.status).toBe(403);
        expect(res.body.item_id).toBeUndefined();
      }
    }
  });

  it('refuses a no-op PATCH of a bound service from a service token of another identity too', async () => {
    const other = api.idp.mint({ sub: 'someone', roles: ['service'], extra: { client_id: 'own-c' } });
    const res = await api.call('PATCH', `/tasks/${tasks.get(boundB)}`, {
      token: other,
      body: { progress: 0 },
    });
    expect(res.status).toBe(403);
    expect(res.body.item_id).toBeUndefined();
  });

  it('refuses its POST /events naming a service without a client, or a deleted one, with 403', async () => {
    for (const body of [
      { message: 'hello', task_service: unbound },
      { message: 'hello', task: tasks.get(unbound) },
      { message: 'hello', task: tasks.get(gone) },
    ]) {
      const res = await api.call('POST', '/events', { token: ownToken('own-a'), body });
      expect(res.status, JSON.stringify(body)).toBe(403);
    }
  });

  it('accepts its reports of its own service, no-ops included, and an admin for any service', async () => {
    const taskId = tasks.get(own) as string;
    const token = ownToken('own-a');
    expect((await api.call('PATCH', `/tasks/${taskId}`, { token, body: { progress: 10 } })).status).toBe(200);
    const noop = await api.call('PATCH', `/tasks/${taskId}`, { token, body: { progress: 10 } });
    expect(noop.status).toBe(200);
    expect(noop.body.item_id).toBe(taskId);
    const event = await api.call('POST', '/events', { token, body: { message: 'hello', task: taskId } });
    expect(event.status).toBe(200);
    const admin = await api.call('PATCH', `/tasks/${tasks.get(unbound)}`, { body: { progress: 5 } });
    expect(admin.status).toBe(200);
  });

  it('keeps a service token that is not an own client: any such token reports for a service without a client', async () => {
    const res = await api.call('PATCH', `/tasks/${tasks.get(unbound)}`, {
      token: api.idp.service(),
      body: { progress: 6 },
    });
    expect(res.status).toBe(200);
  });
});

describe('events written by clients', () => {
  it('marks client events source "client" and the coordinator own events source "coordinator"', async () => {
    const posted = await api.call('POST', '/events', { body: { message: 'a note from a client' } });
    expect(posted.status).toBe(200);
    expect(posted.body.source).toBe('client');
    await api.call('POST', '/task-services', { body: { name: 'src', url: fake.url } });
    await releaseTasks();
    const list = await api.call('GET', '/events?limit=100');
    const created = list.body.results.find((e: any) => /created in state initializing/.test(e.message));
    expect(created.source).toBe('coordinator');
  });

  it('refuses a client event whose message has the form of a state change, naming message', async () => {
    const published = 'release RE_00000000, version 0.0.1 changed from publishing to published';
    for (const message of [
      'release RE_00000000, version 0.1.0 changed from staged to published',
      'task TA_00000000 changed from running to staged',
      // Invisible characters, other spaces and look-alike letters read the same (forged-messages.ts).
      `\u200B${published}`,
      `\uFEFF${published}`,
      published.replace('changed', 'chan\u2060ged'),
      published.replaceAll(' ', '\u00A0'),
      published.replace('release', 'r\u0435lease'),
    ]) {
      const res = await api.call('POST', '/events', { body: { message } });
      expect(res.status).toBe(400);
      expect(res.body.error.fields.message).toBeDefined();
    }
  });
});

describe('bounded input', () => {
  it('answers a 500 KB description with a 400 naming the field, not a 500', async () => {
    const res = await api.call('POST', '/releases', {
      body: { name: 'big', description: 'x'.repeat(500 * 1024), studies: [STUDY] },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.fields.description).toBeDefined();
  });

  it('refuses a string over its documented maximum with a 400 naming the field', async () => {
    const cases: [string, string, Record<string, unknown>, string][] = [
      ['POST', '/releases', { name: 'n'.repeat(201), studies: [STUDY] }, 'name'],
      ['POST', '/releases', { name: 'n', description: 'd'.repeat(10_001), studies: [STUDY] }, 'description'],
      ['POST', '/releases', { name: 'n', tags: ['t'.repeat(101)], studies: [STUDY] }, 'tags.0'],
      ['POST', '/releases', { name: 'n', tags: Array(51).fill('t'), studies: [STUDY] }, 'tags'],
      ['POST', '/task-services', { name: 'n', url: `${fake.url}/${'p'.repeat(2100)}` }, 'url'],
      ['POST', '/task-services', { name: 'n', url: fake.url, author: 'a'.repeat(201) }, 'author'],
      ['POST', '/events', { message: 'm'.repeat(10_001) }, 'message'],
    ];
    for (const [method, path, body, field] of cases) {
      const res = await api.call(method, path, { body });
      expect(res.status, `${method} ${path} ${field}`).toBe(400);
      expect(Object.keys(res.body.error.fields ?? {}), `${method} ${path}`).toContain(field);
    }
  });

  it('answers a path segment longer than any id with a 404, never a 500 from the key lookup', async () => {
    const long = 'x'.repeat(3000);
    for (const path of [
      `/events/${long}`,
      `/task-services/${long}`,
      `/studies/${long}`,
      `/releases/${long}`,
    ]) {
      const res = await api.call('GET', path);
      expect(res.status, path).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    expect((await api.call('DELETE', `/events/${long}`)).status).toBe(404);
  });

  it('answers a malformed percent-escape in a path with 400 or 404, never 500', async () => {
    for (const path of ['/releases/%E0%A4%A', '/tasks/%', '/task-services/%ZZ', '/events/%E0%A4%A/']) {
      const res = await api.call('GET', path);
      expect([400, 404], path).toContain(res.status);
      expect(res.body.error.code).toEqual(expect.any(String));
    }
  });
});
