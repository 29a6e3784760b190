import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coordinatorClient } from '#cli/api.js';
import { itDescribesItself } from '#test/helpers/api-docs.js';
import { type CoordinatorApi, seedStudies, startCoordinatorApi } from '#test/helpers/coordinator-api.js';

/**
 * GET /openapi.json and /docs of the coordinator API, in either handler mode (the bundled project serves Redoc's
 * script from the copy shipped beside the bundle), and the typed client of cli/api.ts against it.
 */
let api: CoordinatorApi;
beforeAll(async () => {
  api = await startCoordinatorApi();
});
afterAll(async () => {
  await api?.close();
});

describe('the coordinator API describes itself', () => {
  itDescribesItself('coordinator', () => api.baseUrl);
});

describe('the typed coordinator client (cli/api.ts)', () => {
  it('calls with the documented paths, parameters and answers', async () => {
    await seedStudies(api, ['SD_TYPED001']);
    const client = coordinatorClient(api.baseUrl, api.idp.admin());
    const list = await client.GET('/studies', { params: { query: { limit: 5 } } });
    expect(list.response.status).toBe(200);
    expect(list.data?.results.map((s) => s.item_id)).toContain('SD_TYPED001');
    const one = await client.GET('/studies/{id}', { params: { path: { id: 'SD_TYPED001' } } });
    expect(one.data?.name).toBe('Study SD_TYPED001');
    const missing = await client.GET('/studies/{id}', { params: { path: { id: 'SD_NOTTHERE' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.error.code).toBe('not_found');
    const anonymous = await coordinatorClient(api.baseUrl, null).GET('/releases');
    expect(anonymous.response.status).toBe(401);
  });
});
