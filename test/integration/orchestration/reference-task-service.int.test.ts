import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningTaskService, startTaskService } from '#examples/task-service/service.js';
import { type ReleaseHarness, startReleaseHarness } from '#test/helpers/release-harness.js';

/** The reference task service (examples/task-service) against the real coordinator, and its own protocol rules. */
describe('reference task service', () => {
  let h: ReleaseHarness;
  const running: RunningTaskService[] = [];
  const start = async (overrides: Partial<Parameters<typeof startTaskService>[0]> = {}) => {
    const svc = await startTaskService(
      {
        name: `reference-${running.length}`,
        coordinatorUrl: h.api.baseUrl,
        callbackToken: async () => h.api.idp.service(),
        auth: {
          mode: 'jwks',
          issuer: h.api.idp.issuer,
          audience: [h.api.idp.taskServiceAudience],
          requiredRole: 'service',
        },
        stageSeconds: 0.2,
        publishSeconds: 0.1,
        progressSteps: 2,
        failAt: [],
        ...overrides,
      },
      { port: 0, host: '127.0.0.1' },
    );
    running.push(svc);
    return svc;
  };
  const register = async (svc: RunningTaskService) => {
    const res = await h.api.call('POST', '/task-services', {
      body: { name: 'reference', description: 'reference task service', author: 'tests', url: svc.url },
    });
    expect(res.status).toBe(200);
    return res.body.item_id as string;
  };
  /** A token like the coordinator's own: the service role, for the task services' audience. */
  const coordinatorToken = () =>
    h.api.idp.mint({ sub: 'coordinator', roles: ['service'], audience: h.api.idp.taskServiceAudience });
  const post = (svc: RunningTaskService, body: unknown, token: string | null = coordinatorToken()) =>
    fetch(`${svc.url}/tasks`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  beforeAll(async () => {
    h = await startReleaseHarness();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((s) => s.stop()));
    await h.reset();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('takes a release through staging and publishing with two of them, reporting progress by callback', async () => {
    const ids = [];
    for (let i = 0; i < 2; i++) ids.push(await register(await start()));
    const rel = await h.createRelease();
    await h.waitForState(rel.item_id, 'staged');
    await h.api.call('POST', `/releases/${rel.item_id}/publish`);
    const done = await h.waitForState(rel.item_id, 'published');
    expect(done.tasks.map((t: any) => t.state)).toEqual(['published', 'published']);
    for (const id of ids) await h.api.call('PATCH', `/task-services/${id}`, { body: { enabled: false } });
  });

  it('logs the coordinator’s correlation id (X-Request-Id) with every action', async () => {
    const lines: string[] = [];
    const id = await register(await start({ log: (line: string) => lines.push(line) }));
    const correlation = `ref-${Date.now()}`;
    const rel = await h.api.call('POST', '/releases', {
      body: { name: 'correlated', studies: ['SD_RC000001'] },
      headers: { 'X-Request-Id': correlation },
    });
    expect(rel.status).toBe(200);
    await h.waitForState(rel.body.item_id, 'staged');
    const actions = lines.filter((l) => /^(initialize|start) /.test(l));
    expect(actions.length).toBeGreaterThanOrEqual(2);
    for (const l of actions) expect(l).toContain(`[${correlation}]`);
    await h.api.call('PATCH', `/task-services/${id}`, { body: { enabled: false } });
  });

  it('fails the release when a failure is injected into staging', async () => {
    const id = await register(await start({ failAt: ['staging'] }));
    const rel = await h.createRelease();
    const done = await h.waitForState(rel.item_id, ['failed', 'canceled']);
    expect(done.state).toBe('failed');
    expect(done.tasks[0].state).toBe('failed');
    await h.api.call('PATCH', `/task-services/${id}`, { body: { enabled: false } });
  });

  it('answers 401 without a valid token, 403 without the required role, 400/404/503 as the spec says', async () => {
    const svc = await start();
    expect(
      (await post(svc, { action: 'initialize', task_id: 'TA_1', release_id: 'RE_1' }, null)).status,
    ).toBe(401);
    expect(
      (await post(svc, { action: 'initialize', task_id: 'TA_1', release_id: 'RE_1' }, 'not.a.jwt')).status,
    ).toBe(401);
    expect(
      (
        await post(
          svc,
          { action: 'initialize', task_id: 'TA_1', release_id: 'RE_1' },
          h.api.idp.mint({ sub: 'reader', roles: ['user'], audience: h.api.idp.taskServiceAudience }),
        )
      ).status,
    ).toBe(403);
    expect((await post(svc, '{not json')).status).toBe(400);
    expect((await post(svc, { action: 'initialize', task_id: 'TA_1' })).status).toBe(400);
    expect((await post(svc, { action: 'explode', task_id: 'TA_1', release_id: 'RE_1' })).status).toBe(400);
    expect((await post(svc, { action: 'get_status', task_id: 'TA_X', release_id: 'RE_1' })).status).toBe(404);
    const init = await post(svc, { action: 'initialize', task_id: 'TA_1', release_id: 'RE_1' });
    expect(init.status).toBe(200);
    expect(await init.json()).toMatchObject({
      kf_id: 'TA_1',
      task_id: 'TA_1',
      release_id: 'RE_1',
      state: 'pending',
    });
    expect((await post(svc, { action: 'publish', task_id: 'TA_1', release_id: 'RE_1' })).status).toBe(503);
    const status = await fetch(`${svc.url}/status`, {
      headers: { Authorization: `Bearer ${coordinatorToken()}` },
    });
    expect(await status.json()).toMatchObject({ name: 'reference-0', message: 'ready for work' });
    svc.ready = false;
    expect(
      (await fetch(`${svc.url}/status`, { headers: { Authorization: `Bearer ${coordinatorToken()}` } }))
        .status,
    ).toBe(503);
  });
});
