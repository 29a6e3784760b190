import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReleaseHarness, startReleaseHarness } from '#test/helpers/release-harness.js';

/**
 * A task callback must fit its release's phase. Reproduced wedge: while the release was running, a task went
 * staged and then published by PATCH; the release then waited forever for that task to be staged.
 */
describe('task callbacks and the release phase', () => {
  let h: ReleaseHarness;
  beforeAll(async () => {
    h = await startReleaseHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('refuses publishing/published while the release is running with a 409 naming the allowed states, and the release still stages', async () => {
    const [a, b] = await h.addServices(2, { stageMs: Number.POSITIVE_INFINITY, callbacks: false });
    const rel = await h.createRelease();
    const running = await h.waitFor(
      rel.item_id,
      (r) => r.state === 'running' && r.tasks.every((t: any) => t.state === 'running'),
    );
    const taskOf = (svc: string) =>
      running.tasks.find((t: any) => String(t.task_service).endsWith(`/${svc}`)).item_id as string;
    const [taskA, taskB] = [taskOf(a.id), taskOf(b.id)];
    const patch = (id: string, state: string) =>
      h.api.call('PATCH', `/tasks/${id}`, { token: h.api.idp.service(), body: { state } });

    (a.fake.tasks.get(taskA) as { state: string }).state = 'staged';
    expect((await patch(taskA, 'staged')).status).toBe(200);
    // The same report sent again while the release is live: answered with the task, nothing written.
    const again = await patch(taskA, 'staged');
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ item_id: taskA, state: 'staged' });
    for (const state of ['publishing', 'published']) {
      const res = await patch(taskA, state);
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('conflict');
      expect(res.body.error.message).toContain('running, staged, failed, canceled');
    }
    expect((await h.api.call('GET', `/tasks/${taskA}`)).body.state).toBe('staged');

    (b.fake.tasks.get(taskB) as { state: string }).state = 'staged';
    expect((await patch(taskB, 'staged')).status).toBe(200);
    const staged = await h.waitForState(rel.item_id, 'staged');
    expect(staged.tasks.map((t: any) => t.state)).toEqual(['staged', 'staged']);
    expect((await h.api.call('DELETE', `/releases/${rel.item_id}`)).status).toBe(200);
    const canceled = await h.waitForState(rel.item_id, 'canceled');
    // Once the release is over, even a report of exactly what the task is, state or progress, is a 409.
    const last = canceled.tasks.find((t: any) => t.item_id === taskA);
    for (const body of [
      { state: last.state, progress: last.progress },
      { state: last.state },
      { progress: last.progress },
    ]) {
      const res = await h.api.call('PATCH', `/tasks/${taskA}`, { token: h.api.idp.service(), body });
      expect(res.status).toBe(409);
      expect(res.body.error.message).toContain('release that is canceled');
    }
  });

  it('refuses any report once the release is over, progress alone included, and changes nothing', async () => {
    await h.reset();
    const [svc] = await h.addServices(1, { stageMs: 0, publishMs: 0 });
    const rel = await h.createRelease();
    await h.waitForState(rel.item_id, 'staged');
    expect((await h.api.call('POST', `/releases/${rel.item_id}/publish`)).status).toBe(200);
    const done = await h.waitForState(rel.item_id, 'published');
    const task = done.tasks[0].item_id as string;
    const before = (await h.api.call('GET', `/tasks/${task}`)).body;
    for (const body of [{ progress: 50 }, { state: 'published', progress: 10 }, { state: 'running' }]) {
      const res = await h.api.call('PATCH', `/tasks/${task}`, { token: h.api.idp.service(), body });
      expect(res.status).toBe(409);
      expect(res.body.error.message).toContain('published');
    }
    // Exactly what the task is (a report sent again): refused too, since the release is over.
    for (const body of [{ state: 'published', progress: 100 }, { state: 'published' }, { progress: 100 }]) {
      const same = await h.api.call('PATCH', `/tasks/${task}`, { token: h.api.idp.service(), body });
      expect(same.status).toBe(409);
      expect(same.body.error.message).toContain('release that is published');
    }
    // A failure report reaches the release itself: refused the same way.
    const failed = await h.api.call('PATCH', `/tasks/${task}`, {
      token: h.api.idp.service(),
      body: { state: 'failed' },
    });
    expect(failed.status).toBe(409);
    expect((await h.api.call('GET', `/tasks/${task}`)).body).toEqual(before);
    expect((await h.release(rel.item_id)).state).toBe('published');
    expect(svc.fake.callbacks.every((c) => c.status === 200)).toBe(true);
  });
});
