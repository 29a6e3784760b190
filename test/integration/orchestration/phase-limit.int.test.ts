import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isTerminal, type ReleaseHarness, startReleaseHarness } from '#test/helpers/release-harness.js';

/**
 * MAX_PHASE_SECONDS through the real state machine: a task that stays `running` (or `publishing`) is not polled for
 * ever. With a limit of 3 s, a service that never finishes fails its task, the reason naming it, and the release
 * fails; the other services are sent cancel.
 */
describe('MAX_PHASE_SECONDS', () => {
  let h: ReleaseHarness;
  beforeAll(async () => {
    h = await startReleaseHarness({ MAX_PHASE_SECONDS: '3' });
  });
  afterEach(async () => {
    await h.reset();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('fails a task still running when staging passes the limit, naming it, and the release with it', async () => {
    const [stuck, quick] = await h.addServices(2, (i) =>
      i === 0 ? { stageMs: Number.POSITIVE_INFINITY, callbacks: false } : {},
    );
    const rel = await h.createRelease();
    const done = await h.waitFor(rel.item_id, isTerminal);
    expect(done.state).toBe('failed');
    const stuckTask = done.tasks.find((t: any) => t.task_service.endsWith(stuck.id));
    const quickTask = done.tasks.find((t: any) => t.task_service.endsWith(quick.id));
    expect([stuckTask.state, quickTask.state]).toEqual(['failed', 'canceled']);
    // It was polled until then, and told to stop at the end.
    expect(stuck.fake.actionsFor(stuckTask.item_id)).toContain('get_status');
    expect(stuck.fake.actionsFor(stuckTask.item_id).at(-1)).toBe('cancel');
    const events = await h.events(rel.item_id);
    const taskError = events.find(
      (e) => e.event_type === 'error' && e.task?.endsWith(`/tasks/${stuckTask.item_id}`),
    );
    expect(taskError.message).toContain(
      `task ${stuckTask.item_id} changed from running to failed: task service "${stuck.fake.name}" (${stuck.id}) had ` +
        'not finished: the task was still running when the staging phase passed its limit of 3 s (MAX_PHASE_SECONDS',
    );
    expect(events.map((e) => e.message)).toContain(
      `release ${rel.item_id}: the staging phase passed MAX_PHASE_SECONDS (3 s) with 1 task(s) still at work: ` +
        `${stuckTask.item_id} (task service "${stuck.fake.name}" (${stuck.id}), running)`,
    );
    // Not before the limit: the release was created at least 3 s before the failure.
    const failedAt = Date.parse(taskError.created_at);
    expect(failedAt - Date.parse(rel.created_at)).toBeGreaterThanOrEqual(3000);
  });

  it('times publishing from the publish request: a task stuck publishing fails the release', async () => {
    const [stuck] = await h.addServices(1, { publishMs: Number.POSITIVE_INFINITY, callbacks: false });
    const rel = await h.createRelease();
    await h.waitForState(rel.item_id, 'staged');
    expect((await h.api.call('POST', `/releases/${rel.item_id}/publish`)).status).toBe(200);
    const done = await h.waitFor(rel.item_id, isTerminal);
    expect(done.state).toBe('failed');
    const events = await h.events(rel.item_id);
    expect(events.map((e) => e.message)).toContain(
      `release ${rel.item_id}: the publishing phase passed MAX_PHASE_SECONDS (3 s) with 1 task(s) still at work: ` +
        `${done.tasks[0].item_id} (task service "${stuck.fake.name}" (${stuck.id}), publishing)`,
    );
  });
});
