import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CoordinatorApi, startCoordinatorApi } from '#test/helpers/coordinator-api.js';
import {
  closedPortUrl,
  type FakeTaskService,
  startFakeTaskService,
} from '#test/helpers/fake-task-service/index.js';

let api: CoordinatorApi;
let fake: FakeTaskService;

beforeAll(async () => {
  api = await startCoordinatorApi({ TASK_SERVICE_PROBE_TIMEOUT_MS: '400' });
  fake = await startFakeTaskService({ name: 'snapshot' });
});
afterAll(async () => {
  await fake?.stop();
  await api?.close();
});

const register = (body: Record<string, unknown>) =>
  api.call('POST', '/task-services', {
    body: { name: 'snapshot', description: 'd', author: 'me', ...body },
  });

describe('POST /task-services', () => {
  it('registers a service that answers GET /status, storing the url without trailing slashes', async () => {
    fake.status = 'ok';
    const res = await register({ url: `${fake.url}//` });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: 'snapshot',
      description: 'd',
      author: 'me',
      url: fake.url,
      enabled: true,
      health_status: 'ok',
      last_ok_status: 0,
    });
    expect(res.body.item_id).toMatch(/^TS_[0-9A-HJKMNP-TV-Z]{8}$/);
    expect(res.body.kf_id).toBe(res.body.item_id);
    expect(res.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it("makes the caller (its token's subject) the author when the body names none", async () => {
    fake.status = 'ok';
    const res = await api.call('POST', '/task-services', { body: { name: 'snapshot', url: fake.url } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ author: 'admin-user', description: '' });
  });

  it('probes GET {url}/status with the coordinator bearer token from client credentials', async () => {
    fake.requests.length = 0;
    await register({ url: fake.url });
    const probe = fake.requests.find((r) => r.path === '/status');
    expect(probe?.method).toBe('GET');
    expect(probe?.headers.authorization).toBe(`Bearer ${api.idp.issued.at(-1)}`);
  });

  it('refuses a service whose /status answers a non-200 status, saying so under url', async () => {
    fake.status = { status: 503 };
    const res = await register({ url: fake.url });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_error');
    expect(res.body.error.fields.url[0]).toContain('status 503');
    fake.status = 'ok';
  });

  it('refuses a service whose /status body is not JSON', async () => {
    fake.status = 'not_json';
    const res = await register({ url: fake.url });
    expect(res.status).toBe(400);
    expect(res.body.error.fields.url[0]).toContain('not JSON');
    fake.status = 'ok';
  });

  it('refuses a service whose /status JSON has no string name', async () => {
    fake.status = { json: { message: { name: 'nested' } } };
    const res = await register({ url: fake.url });
    expect(res.status).toBe(400);
    expect(res.body.error.fields.url[0]).toContain('"name"');
    fake.status = 'ok';
  });

  it('refuses a service that does not answer in time', async () => {
    fake.status = 'hang';
    const res = await register({ url: fake.url });
    expect(res.status).toBe(400);
    expect(res.body.error.fields.url[0]).toContain('timed out');
    fake.status = 'ok';
  });

  it('refuses a service nobody listens for', async () => {
    const res = await register({ url: await closedPortUrl() });
    expect(res.status).toBe(400);
    expect(res.body.error.fields.url[0]).toContain('unreachable');
  });

  it('refuses urls that are not http(s)', async () => {
    for (const url of ['ftp://example.com', 'not a url', 'example.com/x']) {
      const res = await register({ url });
      expect(res.status).toBe(400);
      expect(res.body.error.fields.url).toBeDefined();
    }
  });

  it('rejects unknown body fields, naming them', async () => {
    const res = await register({ url: fake.url, colour: 'blue' });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.error.fields)).toContain('colour');
  });

  it('rejects a missing name and a wrong type, naming the fields', async () => {
    const res = await api.call('POST', '/task-services', { body: { url: fake.url, enabled: 'yes' } });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['enabled', 'name']);
  });

  it('writes nothing when the probe fails', async () => {
    const before = (await api.call('GET', '/task-services?limit=100')).body.count;
    fake.status = { status: 500 };
    await register({ url: fake.url });
    fake.status = 'ok';
    expect((await api.call('GET', '/task-services?limit=100')).body.count).toBe(before);
  });
});

describe('GET / PATCH / DELETE /task-services/<id>', () => {
  it('reads a service back and 404s an unknown one', async () => {
    const { secret, ...created } = (await register({ url: fake.url })).body;
    expect(secret).toMatch(/^whsec_/);
    const got = await api.call('GET', `/task-services/${created.item_id}`);
    expect(got.status).toBe(200);
    // The record as registered, without the signing secret: that is in the registration's answer alone.
    expect(got.body).toEqual(created);
    const missing = await api.call('GET', '/task-services/TS_00000000');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
  });

  it('patches name, description, author and enabled without probing', async () => {
    const created = (await register({ url: fake.url })).body;
    fake.requests.length = 0;
    const res = await api.call('PATCH', `/task-services/${created.item_id}`, {
      body: { name: 'renamed', description: 'dd', author: 'you', enabled: false },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'renamed', description: 'dd', author: 'you', enabled: false });
    expect(fake.requests).toHaveLength(0);
  });

  it('re-probes when a PATCH carries a url, and refuses one that does not answer', async () => {
    const created = (await register({ url: fake.url })).body;
    const other = await startFakeTaskService();
    try {
      const moved = await api.call('PATCH', `/task-services/${created.item_id}`, {
        body: { url: `${other.url}/` },
      });
      expect(moved.status).toBe(200);
      expect(moved.body.url).toBe(other.url);
      expect(other.requests.some((r) => r.path === '/status')).toBe(true);
      other.status = { status: 404 };
      const refused = await api.call('PATCH', `/task-services/${created.item_id}`, {
        body: { url: other.url },
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error.fields.url[0]).toContain('status 404');
    } finally {
      await other.stop();
    }
  });

  it('404s a PATCH or DELETE of an unknown service', async () => {
    expect((await api.call('PATCH', '/task-services/TS_00000000', { body: { name: 'x' } })).status).toBe(404);
    expect((await api.call('DELETE', '/task-services/TS_00000000')).status).toBe(404);
  });

  it('deletes a service with 200 and an empty body', async () => {
    const created = (await register({ url: fake.url })).body;
    const res = await api.call('DELETE', `/task-services/${created.item_id}`);
    expect(res.status).toBe(200);
    expect(res.text).toBe('');
    expect(res.headers.get('content-type')).toContain('application/json');
    expect((await api.call('GET', `/task-services/${created.item_id}`)).status).toBe(404);
  });
});

describe('GET /task-services', () => {
  it('filters by enabled with True/False/true/false and refuses other values', async () => {
    const on = (await register({ url: fake.url, name: 'on' })).body;
    const off = (await register({ url: fake.url, name: 'off', enabled: false })).body;
    for (const [value, expected, absent] of [
      ['True', on, off],
      ['true', on, off],
      ['False', off, on],
      ['false', off, on],
    ] as const) {
      const res = await api.call('GET', `/task-services?enabled=${value}&limit=100`);
      expect(res.status).toBe(200);
      const ids = res.body.results.map((r: { item_id: string }) => r.item_id);
      expect(ids).toContain(expected.item_id);
      expect(ids).not.toContain(absent.item_id);
      expect(
        res.body.results.every((r: { enabled: boolean }) => r.enabled === (value.toLowerCase() === 'true')),
      ).toBe(true);
    }
    expect((await api.call('GET', '/task-services?enabled=yes')).status).toBe(400);
  });

  it('lists newest first', async () => {
    const res = await api.call('GET', '/task-services?limit=100');
    const dates = res.body.results.map((r: { created_at: string }) => r.created_at);
    expect(dates).toEqual([...dates].sort().reverse());
  });
});
