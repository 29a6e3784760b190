import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ReleaseHarness, STUDIES, startReleaseHarness } from '#test/helpers/release-harness.js';

/**
 * The operator's day-two controls over whole releases (docs/operations.md): maintenance mode, finishing a stuck
 * publish, and quarantining a task service, each against real executions and fake task services over HTTP.
 */
let h: ReleaseHarness;
beforeAll(async () => {
  h = await startReleaseHarness();
}, 120_000);
afterEach(async () => {
  await h.api.call('PUT', '/maintenance', { body: { on: false } });
  await h.reset();
});
afterAll(async () => {
  await h?.close();
});

const taskOf = (release: any, serviceId: string) =>
  release.tasks.find((t: any) => t.task_service.endsWith(`/${serviceId}`));
const asService = () => ({ token: h.api.idp.service() });

describe('maintenance mode', () => {
  it('refuses new releases with 503 and Retry-After while a running one is published; off takes them again', async () => {
    await h.addServices(1, { stagePolls: 2, publishPolls: 2 });
    const running = await h.createRelease();
    const on = await h.api.call('PUT', '/maintenance', {
      body: { on: true, reason: 'upgrade to 0.3.0', retry_after_seconds: 42 },
    });
    expect(on.status).toBe(200);
    expect(on.body).toMatchObject({ on: true, reason: 'upgrade to 0.3.0', retry_after_seconds: 42 });
    expect(on.body.running_releases).toBeGreaterThanOrEqual(1);

    const refused = await h.api.call('POST', '/releases', { body: { name: 'new', studies: STUDIES } });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('42');
    expect(refused.body.error).toMatchObject({ code: 'maintenance' });
    expect(refused.body.error.message).toContain('upgrade to 0.3.0');

    // Anyone may read the switch; only an admin turns it.
    expect((await h.api.call('GET', '/maintenance', asService())).body).toMatchObject({ on: true });
    expect((await h.api.call('PUT', '/maintenance', { ...asService(), body: { on: false } })).status).toBe(
      403,
    );

    // The running release goes on to its end, publish included.
    await h.waitForState(running.kf_id, 'staged');
    expect((await h.api.call('POST', `/releases/${running.kf_id}/publish`)).status).toBe(200);
    await h.waitForState(running.kf_id, 'published');
    expect((await h.api.call('GET', '/maintenance')).body.running_releases).toBe(0);

    const off = await h.api.call('PUT', '/maintenance', { body: { on: false } });
    expect(off.body).toMatchObject({ on: false, running_releases: 0 });
    const taken = await h.createRelease();
    await h.waitForState(taken.kf_id, 'staged');
  });
});

describe('finishing a stuck publish', () => {
  it('sends publish again to the tasks that have not published, and to no other; 409 in other states', async () => {
    const [fine, stuck] = await h.addServices(2, (i) =>
      i === 0 ? {} : { publishMs: Number.POSITIVE_INFINITY },
    );
    const r = await h.createRelease();
    await h.waitForState(r.kf_id, 'staged');
    const retry = () => h.api.call('POST', `/releases/${r.kf_id}/publish`, { body: { retry: true } });
    expect((await retry()).status).toBe(409);

    expect((await h.api.call('POST', `/releases/${r.kf_id}/publish`)).status).toBe(200);
    const publishing = await h.waitFor(
      r.kf_id,
      (x) => taskOf(x, fine.id).state === 'published' && taskOf(x, stuck.id).state === 'publishing',
    );
    const stuckTask = taskOf(publishing, stuck.id).kf_id;
    const fineTask = taskOf(publishing, fine.id).kf_id;
    const publishes = (fake: typeof fine.fake, task: string) =>
      fake.actionsFor(task).filter((a) => a === 'publish').length;
    expect(publishes(stuck.fake, stuckTask)).toBe(1);

    const asked = await retry();
    expect(asked.status).toBe(200);
    expect(asked.body.tasks).toEqual([
      { task_id: stuckTask, task_service_id: stuck.id, service_name: stuck.fake.name },
    ]);
    for (let i = 0; i < 400 && publishes(stuck.fake, stuckTask) < 2; i++)
      await new Promise((res) => setTimeout(res, 25));
    expect(publishes(stuck.fake, stuckTask)).toBe(2);
    expect(publishes(fine.fake, fineTask)).toBe(1);
    expect((await h.events(r.kf_id)).map((e) => e.message)).toContainEqual(
      expect.stringMatching(/publish sent again to 1 task\(s\) that had not published/),
    );

    // Canceled now, partly published: not published again, and the answer says why.
    await h.api.call('DELETE', `/releases/${r.kf_id}?confirm_published=true`);
    await h.waitForState(r.kf_id, 'canceled');
    const after = await retry();
    expect(after.status).toBe(409);
    expect(after.body.error.message).toMatch(
      /canceled after 1 of 2 task\(s\) had published; it is not published/,
    );
  });
});

describe('quarantining a task service', () => {
  it('disables it, fails its unfinished tasks with the reason, refuses its reports and never calls it again', async () => {
    const [healthy, suspect] = await h.addServices(2, { stageMs: Number.POSITIVE_INFINITY });
    const r = await h.createRelease();
    const running = await h.waitFor(r.kf_id, (x) => x.tasks.every((t: any) => t.state === 'running'));
    const suspectTask = taskOf(running, suspect.id).kf_id;

    const q = await h.api.call('POST', `/task-services/${suspect.id}/quarantine`, {
      body: { reason: 'its credentials leaked' },
    });
    expect(q.status).toBe(200);
    expect(q.body).toMatchObject({
      quarantined: true,
      enabled: false,
      quarantine_reason: 'its credentials leaked',
      failed_tasks: [{ task_id: suspectTask, release_id: r.kf_id }],
      client: { client_id: null, action: 'none' },
    });
    const ended = await h.waitForState(r.kf_id, 'failed');
    expect(taskOf(ended, suspect.id).state).toBe('failed');
    expect(taskOf(ended, healthy.id).state).toBe('canceled');
    expect((await h.events(r.kf_id)).map((e) => e.message)).toContainEqual(
      expect.stringContaining('was quarantined by'),
    );
    // Cancel went to the healthy service only: the quarantined one is never called again.
    expect(healthy.fake.actionsFor(taskOf(ended, healthy.id).kf_id)).toContain('cancel');
    expect(suspect.fake.actionsFor(suspectTask)).not.toContain('cancel');

    // Its reports and events are refused (an admin's are not its own).
    const report = await h.api.call('PATCH', `/tasks/${suspectTask}`, {
      ...asService(),
      body: { progress: 50 },
    });
    expect(report.status).toBe(403);
    expect(report.body.error.message).toContain('quarantined');
    const event = await h.api.call('POST', '/events', {
      ...asService(),
      body: { message: 'still here', task_service: suspect.id },
    });
    expect(event.status).toBe(403);
    // It cannot be enabled behind the quarantine's back, and is in no new release.
    expect(
      (await h.api.call('PATCH', `/task-services/${suspect.id}`, { body: { enabled: true } })).status,
    ).toBe(409);
    const next = await h.createRelease();
    expect(next.tasks.map((t: any) => t.task_service)).not.toContainEqual(
      expect.stringContaining(suspect.id),
    );
    await h.api.call('DELETE', `/releases/${next.kf_id}`);

    const released = await h.api.call('DELETE', `/task-services/${suspect.id}/quarantine`);
    expect(released.status).toBe(200);
    expect(released.body).toMatchObject({ quarantined: false, enabled: true, quarantine_reason: null });
    expect((await h.api.call('DELETE', `/task-services/${suspect.id}/quarantine`)).status).toBe(409);
  });
});
