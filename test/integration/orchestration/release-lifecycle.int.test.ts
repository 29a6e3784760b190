import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTokenVerifier } from '#functions/shared/auth.js';
import {
  isTerminal,
  type ReleaseHarness,
  STUDIES,
  startReleaseHarness,
} from '#test/helpers/release-harness.js';

/**
 * Whole releases: the real state machine in aws-local-stepfunctions (through the local Step Functions endpoint),
 * the real handlers, DynamoDB Local, and fake task services over real HTTP. After every scenario the release is
 * terminal (or staged, waiting for publish), its execution is finished, and its events tell what happened.
 */
const messages = (events: any[]) => events.map((e) => e.message as string);

/** Polls a condition of the test's own fakes (no fixed sleep); 30 s only bounds a hang. */
async function until(cond: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('release orchestration', () => {
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

  it('drives a release from initializing to published with callbacks, versioning the release and its studies', async () => {
    // Staging takes long enough for the coordinator to record `running` first, even on a busy machine: a callback
    // that overtakes the start step finds the task still `pending` and is refused (409), and polling stages it.
    const [a, b] = await h.addServices(2, (i) => ({
      stageMs: 1000,
      publishMs: 150,
      legacySpelling: i === 1,
    }));
    const rel = await h.createRelease();
    expect(rel.state).toBe('initializing');
    const staged = await h.waitForState(rel.item_id, 'staged');
    expect(staged.tasks.map((t: any) => [t.state, t.progress])).toEqual([
      ['staged', 100],
      ['staged', 100],
    ]);
    expect(await h.execution(rel.item_id)).toBe('RUNNING'); // waiting for publish

    const pub = await h.api.call('POST', `/releases/${rel.item_id}/publish`);
    expect(pub.status).toBe(200);
    expect(typeof pub.body.message).toBe('string');
    const done = await h.waitForState(rel.item_id, 'published');
    expect(done.version).toBe('0.1.0');
    expect(done.tasks.every((t: any) => t.state === 'published')).toBe(true);

    // Every task service saw the whole exchange, with the release's studies and the coordinator's bearer token.
    for (const { fake } of [a, b]) {
      const taskId = [...fake.tasks.keys()][0];
      // Plus get_status whenever a poll round came before this task's callback.
      expect(fake.actionsFor(taskId).filter((x) => x !== 'get_status')).toEqual([
        'initialize',
        'start',
        'publish',
      ]);
      expect(fake.received[0].studies).toEqual(STUDIES);
      expect(fake.received[0].releaseId).toBe(rel.item_id);
      // A poll round may have seen `published` before this service's own callback came back: wait for its answer.
      await until(() => fake.callbacks.length >= 2, 'both callbacks answered');
      expect(fake.callbacks.map((c) => [c.state, c.status])).toEqual([
        ['staged', 200],
        ['published', 200],
      ]);
    }
    const verifier = createTokenVerifier({
      AUTH_ISSUER: h.api.idp.issuer,
      AUTH_AUDIENCE: [h.api.idp.taskServiceAudience],
      AUTH_JWKS_URI: h.api.idp.jwksUri,
      AUTH_ROLES_CLAIMS: ['roles'],
      AUTH_GROUPS_CLAIMS: ['groups'],
      AUTH_ADMIN_ROLE: 'admin',
      AUTH_SERVICE_ROLE: 'service',
      AUTH_GRACE_SECONDS: 0,
    });
    const bearer = a.fake.received[0].authorization?.replace(/^Bearer /, '') ?? '';
    expect((await verifier.verify(bearer)).sub).toBe('coordinator');

    const events = await h.events(rel.item_id);
    expect(messages(events)).toContain(
      `release ${rel.item_id}, version 0.1.0 changed from publishing to published`,
    );
    for (const [from, to] of [
      ['initializing', 'running'],
      ['running', 'staged'],
      ['staged', 'publishing'],
    ])
      expect(messages(events)).toContain(
        `release ${rel.item_id}, version 0.0.1 changed from ${from} to ${to}`,
      );
    expect(events.every((e) => e.event_type === 'info')).toBe(true);

    const study = await h.api.call('GET', `/studies/${STUDIES[0]}`);
    expect(study.body.last_pub_version).toBe('0.1.0');
    expect(study.body.last_pub_date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(await h.execution(rel.item_id)).toBe('SUCCEEDED');
  });

  it('stages by get_status polling alone when a task service never calls back', async () => {
    await h.addServices(1, { stageMs: 100, callbacks: false });
    const rel = await h.createRelease();
    const staged = await h.waitForState(rel.item_id, 'staged');
    const fake = h.services[0];
    expect(fake.callbacks).toEqual([]);
    expect(fake.actionsFor(staged.tasks[0].item_id)).toContain('get_status');
    await h.api.call('DELETE', `/releases/${rel.item_id}`);
    await h.waitForState(rel.item_id, 'canceled');
  });

  it('gives a major release the next major version after the highest published one', async () => {
    const first = await h.createRelease(); // no enabled services: straight to staged
    await h.waitForState(first.item_id, 'staged');
    await h.api.call('POST', `/releases/${first.item_id}/publish`);
    const minor = await h.waitForState(first.item_id, 'published');
    const major = await h.createRelease({ is_major: true });
    await h.waitForState(major.item_id, 'staged');
    await h.api.call('POST', `/releases/${major.item_id}/publish`);
    const done = await h.waitForState(major.item_id, 'published');
    const [maj] = minor.version.split('.').map(Number);
    expect(done.version).toBe(`${maj + 1}.0.0`);
  });

  it('takes a release without enabled task services straight to staged, and publishing straight to published', async () => {
    const rel = await h.createRelease();
    expect(rel.tasks).toEqual([]);
    const staged = await h.waitForState(rel.item_id, 'staged');
    expect(staged.tasks).toEqual([]);
    await h.api.call('POST', `/releases/${rel.item_id}/publish`);
    const done = await h.waitForState(rel.item_id, 'published');
    expect(done.version).toMatch(/^\d+\.\d+\.0$/);
    expect(messages(await h.events(rel.item_id))).toContain(
      `release ${rel.item_id}, version ${done.version} changed from publishing to published`,
    );
    expect(await h.execution(rel.item_id)).toBe('SUCCEEDED');
  });

  it('lets exactly one of two concurrent publishes win', async () => {
    await h.addServices(1, { stageMs: 0, publishMs: 100 });
    const rel = await h.createRelease();
    await h.waitForState(rel.item_id, 'staged');
    const [x, y] = await Promise.all([
      h.api.call('POST', `/releases/${rel.item_id}/publish`),
      h.api.call('POST', `/releases/${rel.item_id}/publish`),
    ]);
    expect([x.status, y.status].sort()).toEqual([200, 409]);
    const done = await h.waitForState(rel.item_id, 'published');
    const events = messages(await h.events(rel.item_id));
    const ofRelease = events.filter((m) => m.startsWith(`release ${rel.item_id},`));
    expect(ofRelease.filter((m) => m.endsWith('changed from staged to publishing'))).toHaveLength(1);
    expect(ofRelease.filter((m) => m.endsWith('changed from publishing to published'))).toHaveLength(1);
    expect(h.services[0].actionsFor(done.tasks[0].item_id).filter((a) => a === 'publish')).toHaveLength(1);
    // The published version is claimed once: its guard item names this release.
    const guard = await h.api.doc.send(
      new GetCommand({
        TableName: h.api.tables.COORDINATOR_TABLE,
        Key: { pk: `VERSION#${done.version}`, sk: 'VERSION' },
      }),
    );
    expect(guard.Item?.releaseId).toBe(rel.item_id);
  });

  it('refuses publish unless staged (409), for non-admins (403) and for unknown releases (404)', async () => {
    await h.addServices(1, { stageMs: Number.POSITIVE_INFINITY });
    const rel = await h.createRelease();
    await h.waitForState(rel.item_id, 'running');
    expect((await h.api.call('POST', `/releases/${rel.item_id}/publish`)).status).toBe(409);
    expect(
      (await h.api.call('POST', `/releases/${rel.item_id}/publish`, { token: h.api.idp.service() })).status,
    ).toBe(403);
    expect((await h.api.call('POST', '/releases/RE_00000000/publish')).status).toBe(404);
    await h.api.call('DELETE', `/releases/${rel.item_id}`);
    await h.waitForState(rel.item_id, 'canceled');
  });

  describe('cancel', () => {
    const expectCanceled = async (releaseId: string) => {
      const done = await h.waitFor(releaseId, isTerminal);
      expect(done.state).toBe('canceled');
      expect(done.tasks.every((t: any) => t.state === 'canceled')).toBe(true);
      for (const t of done.tasks) {
        const fake = h.services.find((s) => s.received.some((r) => r.taskId === t.item_id));
        expect(fake?.actionsFor(t.item_id)).toContain('cancel');
      }
      const events = messages(await h.events(releaseId));
      expect(events.some((m) => m.endsWith('to canceling'))).toBe(true);
      expect(events.some((m) => m.endsWith('changed from canceling to canceled'))).toBe(true);
      expect(await h.execution(releaseId)).toBe('SUCCEEDED');
      return done;
    };

    it('cancels while initializing', async () => {
      await h.addServices(2, { delays: { initialize: 150 } });
      const rel = await h.createRelease();
      const res = await h.api.call('DELETE', `/releases/${rel.item_id}`);
      expect(res.status).toBe(200);
      expect(res.body.state).toBe('canceling');
      await expectCanceled(rel.item_id);
      expect(messages(await h.events(rel.item_id))).toContain(
        `release ${rel.item_id}, version ${rel.version} changed from initializing to canceling`,
      );
    });

    it('cancels while running, answers a repeat DELETE while canceling, and 409 once canceled', async () => {
      await h.addServices(2, { stageMs: Number.POSITIVE_INFINITY, delays: { cancel: 150 } });
      const rel = await h.createRelease();
      await h.waitForState(rel.item_id, 'running');
      const first = await h.api.call('DELETE', `/releases/${rel.item_id}`);
      expect(first.body.state).toBe('canceling');
      const again = await h.api.call('DELETE', `/releases/${rel.item_id}`);
      expect(again.status).toBe(200);
      expect(again.body.state).toBe('canceling');
      await expectCanceled(rel.item_id);
      expect((await h.api.call('DELETE', `/releases/${rel.item_id}`)).status).toBe(409);
    });

    it('cancels while staged', async () => {
      await h.addServices(2);
      const rel = await h.createRelease();
      await h.waitForState(rel.item_id, 'staged');
      await h.api.call('DELETE', `/releases/${rel.item_id}`);
      await expectCanceled(rel.item_id);
    });

    it('cancels while publishing', async () => {
      await h.addServices(2, { publishMs: Number.POSITIVE_INFINITY });
      const rel = await h.createRelease();
      await h.waitForState(rel.item_id, 'staged');
      await h.api.call('POST', `/releases/${rel.item_id}/publish`);
      await h.waitFor(rel.item_id, (r) => r.tasks.every((t: any) => t.state === 'publishing'));
      // Publishing makes work public: a cancel now needs the confirmation (protocol.int.test.ts has the details).
      expect((await h.api.call('DELETE', `/releases/${rel.item_id}`)).status).toBe(409);
      await h.api.call('DELETE', `/releases/${rel.item_id}?confirm_published=true`);
      const done = await expectCanceled(rel.item_id);
      expect(done.version).toBe(rel.version); // never published: no version claimed
    });
  });

  it('fails the release when a task reports failed mid-staging: culprit failed, others canceled', async () => {
    const [bad, good] = await h.addServices(2, (i) =>
      i === 0 ? { stageMs: 100, failStaging: true } : { stageMs: Number.POSITIVE_INFINITY },
    );
    const rel = await h.createRelease();
    const done = await h.waitFor(rel.item_id, isTerminal);
    expect(done.state).toBe('failed');
    const badTask = done.tasks.find((t: any) => bad.fake.tasks.has(t.item_id));
    const goodTask = done.tasks.find((t: any) => good.fake.tasks.has(t.item_id));
    expect(badTask.state).toBe('failed');
    expect(goodTask.state).toBe('canceled');
    expect(good.fake.actionsFor(goodTask.item_id)).toContain('cancel');
    const events = await h.events(rel.item_id);
    const error = events.find((e) => e.event_type === 'error' && e.task?.endsWith(badTask.item_id));
    expect(error.message).toContain(`task ${badTask.item_id} changed from running to failed`);
    expect(error.message).toContain(bad.id);
    expect(error.task_service).toContain(bad.id);
    expect(messages(events)).toContain(
      `release ${rel.item_id}, version ${rel.version} changed from canceling to failed`,
    );
  });

  it('answers PATCH /tasks: 409 for a transition that is not allowed, 200 progress-only for a repeat', async () => {
    await h.addServices(1, { stageMs: Number.POSITIVE_INFINITY });
    const rel = await h.createRelease();
    const running = await h.waitForState(rel.item_id, 'running');
    const taskId = running.tasks[0].item_id;
    const token = h.api.idp.service();
    const bad = await h.api.call('PATCH', `/tasks/${taskId}`, { token, body: { state: 'published' } });
    expect(bad.status).toBe(409);
    const repeat = await h.api.call('PATCH', `/tasks/${taskId}`, {
      token,
      body: { state: 'running', progress: '40%' },
    });
    expect(repeat.status).toBe(200);
    expect(repeat.body.progress).toBe(40);
    const staged = await h.api.call('PATCH', `/tasks/${taskId}`, {
      token,
      body: { state: 'staged', progress: 100 },
    });
    expect(staged.status).toBe(200);
    // The completing callback wakes the poll loop.
    await h.waitForState(rel.item_id, 'staged');
    await h.api.call('DELETE', `/releases/${rel.item_id}`);
    await h.waitForState(rel.item_id, 'canceled');
  });

  it('carries an in-flight release on after a restart of the Step Functions endpoint: the reconciler resumes it', async () => {
    const { startStepFunctions } = await import('#local/step-functions/endpoint.js');
    await h.addServices(1, { stageMs: Number.POSITIVE_INFINITY, callbacks: false });
    const rel = await h.createRelease();
    await h.waitForState(rel.item_id, 'running');
    const port = Number(new URL(h.sfn.endpoint).port);
    await h.sfn.stop(); // the local stack dies, and its executions with it
    expect(await h.execution(rel.item_id)).toBeUndefined();
    h.sfn = await startStepFunctions({
      port,
      waitMs: (s, sec) => (s === 'PollWait' ? 250 : sec * 1000),
    });
    // The reconciler's first run (bin/local.ts runs it at start-up) starts the generation that never ran here.
    expect((await h.reconcile()).started).toContainEqual({ releaseId: rel.item_id, generation: 0 });
    expect(await h.execution(rel.item_id)).toBe('RUNNING');
    // A second run leaves the release alone while its execution runs.
    const again = await h.reconcile();
    expect(again.started.map((s) => s.releaseId)).not.toContain(rel.item_id);
    // The new execution routed by the stored state (running) into polling; finish the work now.
    const task = h.services[0].tasks.values().next().value;
    if (task) {
      task.state = 'staged';
      task.progress = 100;
    }
    await h.waitForState(rel.item_id, 'staged');
    await h.api.call('DELETE', `/releases/${rel.item_id}`);
    await h.waitForState(rel.item_id, 'canceled');
  });
});
