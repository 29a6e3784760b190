import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesClient } from '#cli/api.js';
import { itDescribesItself } from '#test/helpers/api-docs.js';
import { type FilesApi, startFilesApi } from './harness.js';

/** GET /openapi.json and /docs of the study file service, and the typed client of cli/api.ts against it. */
let api: FilesApi;
beforeAll(async () => {
  api = await startFilesApi();
});
afterAll(async () => {
  await api?.close();
});

describe('the file service describes itself', () => {
  itDescribesItself('files', () => api.baseUrl);
});

describe('the typed file-service client (cli/api.ts)', () => {
  it('calls with a bearer JWT or a developer token', async () => {
    const admin = filesClient(api.baseUrl, { bearer: api.admin });
    const created = await admin.POST('/developer-tokens', { body: { name: 'typed-client' } });
    expect(created.response.status).toBe(201);
    const secret = created.data!.token;
    const listed = await admin.GET('/developer-tokens');
    expect(listed.data?.results.map((t) => t.name)).toContain('typed-client');
    // A developer token reads through DRS (Authorization: Token …).
    const dev = filesClient(api.baseUrl, { token: secret });
    const info = await dev.GET('/ga4gh/drs/v1/service-info');
    expect(info.data?.type.artifact).toBe('drs');
    const unknown = await dev.GET('/ga4gh/drs/v1/objects/{object_id}', {
      params: { path: { object_id: 'FV_00000000' } },
    });
    expect(unknown.response.status).toBe(404);
    expect(unknown.error?.status_code).toBe(404);
  });
});
