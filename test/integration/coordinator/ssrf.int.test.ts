import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CoordinatorApi, startCoordinatorApi } from '#test/helpers/coordinator-api.js';
import { type FakeTaskService, startFakeTaskService } from '#test/helpers/fake-task-service/index.js';

/** Registering task services under the deployed defaults: private addresses refused, plain http allowed here. */
let api: CoordinatorApi;
let fake: FakeTaskService;

beforeAll(async () => {
  api = await startCoordinatorApi({ TASK_SERVICE_ALLOW_PRIVATE: 'false', TASK_SERVICE_ALLOW_HTTP: 'true' });
  fake = await startFakeTaskService({ name: 'inside' });
});
afterAll(async () => {
  await fake?.stop();
  await api?.close();
});

const register = (url: string) => api.call('POST', '/task-services', { body: { name: 'svc', url } });

describe('task-service URLs (SSRF)', () => {
  it('refuses each URL with a 400 under url that names the rule, and never calls it', async () => {
    const port = new URL(fake.url).port;
    const cases: [string, RegExp][] = [
      ['ftp://svc.example.test', /http or https/],
      ['http://user:pw@svc.example.test', /credentials/],
      ['http://169.254.169.254/latest/meta-data', /metadata/],
      ['http://[fd00:ec2::254]/', /metadata/],
      ['http://169.254.7.7/', /link-local/],
      [fake.url, /TASK_SERVICE_ALLOW_PRIVATE/],
      [`http://localhost:${port}`, /TASK_SERVICE_ALLOW_PRIVATE/],
      ['http://10.20.30.40', /TASK_SERVICE_ALLOW_PRIVATE/],
    ];
    for (const [url, rule] of cases) {
      const res = await register(url);
      expect(res.status, url).toBe(400);
      expect(res.body.error.fields.url.join(' '), url).toMatch(rule);
    }
    expect(fake.requests).toHaveLength(0);
    expect((await api.call('GET', '/task-services')).body.count).toBe(0);
  });
});
