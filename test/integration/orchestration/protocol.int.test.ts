import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  isTerminal,
  type ReleaseHarness,
  STUDIES,
  startReleaseHarness,
} from '#test/helpers/release-harness.js';

/**
 * The coordinator's side of the task-service protocol, through the real state machine (local Step Functions) and
 * fake task services over real HTTP: cancel goes to every service of the release; a connection error or a 503 with
 * Retry-After is retried within the action timeout (3 s here); and publishing is never silently undone: a cancel
 * during publishing needs confirm_published=true, and tasks that already published stay published, are sent cancel
 * (discard), and are named in the events.
 */
const messages = (events: any[]) => events.map((e) => e.message as string);

describe('the coordinator side of the protocol', () => {
  let h: ReleaseHarness;
  beforeAll(async () => {
    h = await startReleaseHarness();
  });
  afterEach(async () => {
    await h.reset();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('sends cancel to every task service of a failed release, the one whose task failed included', async () => {
    const [bad, good] = await h.addServices(2, (i) =>
      i === 0 ? { stageMs: 100, failStaging: true } : { stageMs: Number.POSITIVE_INFINITY },
    );
    const rel = await h.createRelease();
    const done = await h.waitFor(rel.item_id, isTerminal);
    expect(done.state).toBe('failed');
    const badTask = done.tasks.find((t: any) => t.task_service.endsWith(bad.id));
    const goodTask = done.tasks.find((t: any) => t.task_service.endsWith(good.id));
    expect([badTask.state, goodTask.state]).toEqual(['failed', 'canceled']);
    expect(good.fake.actionsFor(goodTask.item_id).at(-1)).toBe('cancel');
    // The spec: "the coordinator sends cancel to all task services". The failed one is told to stop too.
    expect(bad.fake.actionsFor(badTask.item_id).at(-1)).toBe('cancel');
  });

  describe('retries within the action timeout', () => {
    it('a reset connection and a 503 with Retry-After to get_status do not fail the task', async () => {
      const [reset, busy] = await h.addServices(2, (i) => ({
        stageMs: 600,
        callbacks: false,
        flaky: {
          get_status:
            i === 0
              ? { times: 2, how: 'reset' as const }
              : { times: 1, how: { status: 503, retryAfter: '1' } },
        },
      }));
      const rel = await h.createRelease();
      const done = await h.waitFor(rel.item_id, (r) => r.state === 'staged' || isTerminal(r));
      expect(done.state).toBe('staged');
      const statusCalls = (s: typeof reset) => s.fake.received.filter((r) => r.action === 'get_status');
      // Each service was asked again after its failures, within the same round.
      expect(statusCalls(reset).length).toBeGreaterThanOrEqual(3);
      expect(statusCalls(busy).length).toBeGreaterThanOrEqual(2);
      const [first, second] = statusCalls(busy);
      expect(second.at - first.at).toBeGreaterThanOrEqual(950); // Retry-After: 1
      expect(messages(await h.events(rel.item_id)).some((m) => m.includes('failed'))).toBe(false);
      await h.api.call('DELETE', `/releases/${rel.item_id}`);
      await h.waitForState(rel.item_id, 'canceled');
    });

    it('a 503 without Retry-After is the spec’s "action rejected": the task fails at once', async () => {
      const [svc] = await h.addServices(1, { actions: { start: { status: 503 } } });
      const rel = await h.createRelease();
      const done = await h.waitFor(rel.item_id, isTerminal);
      expect(done.state).toBe('failed');
      expect(svc.fake.received.filter((r) => r.action === 'start')).toHaveLength(1);
    });
  });

  describe('a release that is publishing', () => {
    /**
     * One service publishes at once, the other never finishes: the release stays publishing, half published. The
     * one that publishes discards its publication when sent cancel, and says so: it answers canceled.
     */
    async function halfPublished(second: Parameters<ReleaseHarness['addServices']>[1] = {}) {
      const [fast, slow] = await h.addServices(2, (i) =>
        i === 0
          ? { actions: { cancel: { state: 'canceled' } } }
          : { publishMs: Number.POSITIVE_INFINITY, ...(typeof second === 'object' ? second : {}) },
      );
      const rel = await h.createRelease();
      await h.waitForState(rel.item_id, 'staged');
      expect((await h.api.call('POST', `/releases/${rel.item_id}/publish`)).status).toBe(200);
      const publishing = await h.waitFor(
        rel.item_id,
        (r) => r.state !== 'publishing' || r.tasks.some((t: any) => t.state === 'published'),
      );
      const taskOf = (s: typeof fast, r = publishing) =>
        r.tasks.find((t: any) => t.task_service.endsWith(s.id));
      return { rel, fast, slow, publishing, taskOf };
    }

    it('is canceled only with confirm_published=true: else a 409 that names what has published', async () => {
      const { rel, fast, slow, publishing, taskOf } = await halfPublished();
      expect(publishing.state).toBe('publishing');
      const published = taskOf(fast);
      const pending = taskOf(slow);
      expect([published.state, pending.state]).toEqual(['published', 'publishing']);

      const refused = await h.api.call('DELETE', `/releases/${rel.item_id}`);
      expect(refused.status).toBe(409);
      expect(refused.body.error.code).toBe('confirmation_required');
      expect(refused.body.error.message).toContain(
        `1 of 2 task(s) have already published: ${published.item_id} (task service "${fast.fake.name}", ${fast.id})`,
      );
      expect(refused.body.error.message).toContain('confirm_published=true');
      expect(refused.body.error.published).toEqual([
        { task_id: published.item_id, task_service_id: fast.id, service_name: fast.fake.name },
      ]);
      expect(refused.body.error.publishing).toEqual([
        { task_id: pending.item_id, task_service_id: slow.id, service_name: slow.fake.name },
      ]);
      expect((await h.release(rel.item_id)).state).toBe('publishing'); // nothing changed
      expect((await h.api.call('DELETE', `/releases/${rel.item_id}?confirm_published=false`)).status).toBe(
        409,
      );

      const confirmed = await h.api.call('DELETE', `/releases/${rel.item_id}?confirm_published=true`);
      expect(confirmed.status).toBe(200);
      expect(confirmed.body.state).toBe('canceling');
      const done = await h.waitForState(rel.item_id, 'canceled');
      // Published is final: that task stays published; the one still at work is canceled.
      expect([taskOf(fast, done).state, taskOf(slow, done).state]).toEqual(['published', 'canceled']);
      // Both services were sent cancel: the one that published, to discard it.
      expect(fast.fake.actionsFor(published.item_id).at(-1)).toBe('cancel');
      expect(slow.fake.actionsFor(pending.item_id).at(-1)).toBe('cancel');
      const events = await h.events(rel.item_id);
      const discard = events.find(
        (e) => e.task?.endsWith(`/tasks/${published.item_id}`) && e.event_type === 'warning',
      );
      expect(discard.message).toBe(
        `task ${published.item_id} had already published; cancel was sent to task service "${fast.fake.name}" ` +
          `(${fast.id}) to discard its publication, and it answered canceled; the task stays published`,
      );
      expect(messages(events)).toContain(
        `release ${rel.item_id} ends canceled after 1 of 2 task(s) had published: ${published.item_id} (task ` +
          `service "${fast.fake.name}" (${fast.id})); cancel was sent to each to discard its publication`,
      );
      // The release was never published: provisional version, and its studies keep their last published version.
      expect(done.version).toBe(rel.version);
      const study = await h.api.call('GET', `/studies/${STUDIES[0]}`);
      expect(study.body.last_pub_version).not.toBe(done.version);
      expect(await h.execution(rel.item_id)).toBe('SUCCEEDED');
    });

    it('a failure while publishing ends the release failed, and the published task is sent cancel and stays published', async () => {
      const { rel, fast, slow, taskOf } = await halfPublished({
        callbacks: false,
        actions: { get_status: { status: 500 } },
      });
      const done = await h.waitFor(rel.item_id, isTerminal);
      expect(done.state).toBe('failed');
      const published = taskOf(fast, done);
      const failed = taskOf(slow, done);
      expect([published.state, failed.state]).toEqual(['published', 'failed']);
      expect(fast.fake.actionsFor(published.item_id).at(-1)).toBe('cancel');
      expect(slow.fake.actionsFor(failed.item_id).at(-1)).toBe('cancel');
      const events = messages(await h.events(rel.item_id));
      expect(events).toContain(
        `task ${published.item_id} had already published; cancel was sent to task service "${fast.fake.name}" ` +
          `(${fast.id}) to discard its publication, and it answered canceled; the task stays published`,
      );
      expect(
        events.some((m) =>
          m.startsWith(`release ${rel.item_id} ends failed after 1 of 2 task(s) had published`),
        ),
      ).toBe(true);
    });
  });
});
