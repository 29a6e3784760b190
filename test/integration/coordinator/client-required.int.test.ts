import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CoordinatorApi, startCoordinatorApi } from '#test/helpers/coordinator-api.js';
import { type FakeTaskService, startFakeTaskService } from '#test/helpers/fake-task-service/index.js';

/** TASK_SERVICE_CLIENT_REQUIRED=true: every task service must name the client whose tokens act for it. */
let api: CoordinatorApi;
let fake: FakeTaskService;

beforeAll(async () => {
  api = await startCoordinatorApi({ TASK_SERVICE_CLIENT_REQUIRED: 'true' });
  fake = await startFakeTaskService({ name: 'required' });
});
afterAll(async () => {
  await fake?.stop();
  await api?.close();
});

describe('TASK_SERVICE_CLIENT_REQUIRED=true', () => {
  it('refuses a registration without client_id with a 400 naming client_id', async () => {
    const res = await api.call('POST', '/task-services', { body: { name: 's', url: fake.url } });
    expect(res.status).toBe(400);
    expect(res.body.error.fields.client_id).toBeDefined();
    expect((await api.call('GET', '/task-services')).body.count).toBe(0);
  });

  it('registers a service that names its client, and refuses clearing it later', async () => {
    const res = await api.call('POST', '/task-services', {
      body: { name: 's', url: fake.url, client_id: 'client-s' },
    });
    expect(res.status).toBe(200);
    expect(res.body.client_id).toBe('client-s');
    const cleared = await api.call('PATCH', `/task-services/${res.body.item_id}`, {
      body: { client_id: null },
    });
    expect(cleared.status).toBe(400);
    expect(cleared.body.error.fields.client_id).toBeDefined();
  });
});
