import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadHandler } from '#local/handlers.js';
import { isTerminal, type ReleaseHarness, startReleaseHarness } from '#test/helpers/release-harness.js';

/**
 * The health check (docs/orchestration.md, Health checks) with HEALTH_FAILURES=3: the scheduled handler is called the way the
 * local timer / EventBridge calls it, against fake task services over HTTP.
 */
describe('health check', () => {
  let h: ReleaseHarness;
  let check: () => Promise<any>;
  beforeAll(async () => {
    h = await startReleaseHarness({ HEALTH_FAILURES: '3' });
    // As the schedule runs it: the manifest entry, from the sources or the bundle (LOCAL_HANDLERS).
    const handler = await loadHandler<() => Promise<any>>('functions/orchestration/handlers/health-check.ts');
    check = () => handler();
  });
  afterEach(async () => {
    await h.reset();
  });
  afterAll(async () => {
    await h?.close();
  });

  const service = async (id: string) => (await h.api.call('GET', `/task-services/${id}`)).body;

  it('marks a service down at the third consecutive failure and fails its work in progress, not staged work', async () => {
    const [slow, fast] = await h.addServices(2, (i) =>
      i === 0 ? { stageMs: Number.POSITIVE_INFINITY } : {},
    );
    const rel = await h.createRelease();
    await h.waitFor(
      rel.item_id,
      (r) =>
        r.tasks.some((t: any) => t.state === 'running') && r.tasks.some((t: any) => t.state === 'staged'),
    );
    slow.fake.status = { status: 503 };
    fast.fake.status = { status: 503 }; // its task is staged: no work in progress to fail

    await check();
    expect(await service(slow.id)).toMatchObject({ health_status: 'ok', last_ok_status: 1 });
    await check();
    expect(await service(slow.id)).toMatchObject({ health_status: 'ok', last_ok_status: 2 });
    expect((await h.release(rel.item_id)).state).toBe('running');

    const report = await check();
    expect(await service(slow.id)).toMatchObject({ health_status: 'down', last_ok_status: 3 });
    expect(report.failedReleases).toEqual([rel.item_id]);

    const done = await h.waitFor(rel.item_id, isTerminal);
    expect(done.state).toBe('failed');
    const slowTask = done.tasks.find((t: any) => t.task_service.endsWith(slow.id));
    const fastTask = done.tasks.find((t: any) => t.task_service.endsWith(fast.id));
    expect(slowTask.state).toBe('failed');
    expect(fastTask.state).toBe('canceled'); // staged work was not failed by the check, only canceled with its release
    const events = await h.events(rel.item_id);
    const error = events.find((e) => e.event_type === 'error' && e.task?.endsWith(slowTask.item_id));
    expect(error.message).toContain(`task service "${slow.fake.name}" (${slow.id}) is down`);
    expect(error.message).toContain('GET /status failed 3 time(s) in a row (last: answered status 503)');
    expect(events.some((e) => e.event_type === 'error' && e.task?.endsWith(fastTask.item_id))).toBe(false);

    // A 200 brings it back: ok, count reset.
    slow.fake.status = 'ok';
    await check();
    expect(await service(slow.id)).toMatchObject({ health_status: 'ok', last_ok_status: 0 });
  });

  it('leaves a staged task alone when its service goes down while another task still works', async () => {
    const [slow, fast] = await h.addServices(2, (i) =>
      i === 0 ? { stageMs: Number.POSITIVE_INFINITY } : {},
    );
    const rel = await h.createRelease();
    await h.waitFor(rel.item_id, (r) => r.tasks.some((t: any) => t.state === 'staged'));
    fast.fake.status = { status: 500 };
    for (let i = 0; i < 3; i++) await check();
    expect(await service(fast.id)).toMatchObject({ health_status: 'down', last_ok_status: 3 });
    const still = await h.release(rel.item_id);
    expect(still.state).toBe('running');
    expect(still.tasks.find((t: any) => t.task_service.endsWith(fast.id)).state).toBe('staged');
    expect(still.tasks.find((t: any) => t.task_service.endsWith(slow.id)).state).toBe('running');
    await h.api.call('DELETE', `/releases/${rel.item_id}`);
    await h.waitForState(rel.item_id, 'canceled');
  });
});
