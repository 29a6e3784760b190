import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningTaskService, startTaskService } from '#examples/task-service/service.js';
import { signatureHeaders } from '#functions/adapters/webhook-signing.js';
import { FakeClock } from '#functions/shared/clock.js';
import { type ReleaseHarness, startReleaseHarness } from '#test/helpers/release-harness.js';

/**
 * Coordinator → task service, signed for that service (Standard Webhooks): the real orchestration (local Step
 * Functions running the release ASL with the real step handlers) sends every action to real reference task
 * services over HTTP, each checking the signature with the secret its registration answered.
 */
describe('actions signed for their own task service', () => {
  let h: ReleaseHarness;
  const running: RunningTaskService[] = [];
  const registered: string[] = [];

  /** A reference service whose signing secrets the test hands it after registering it, as an operator would. */
  const start = async (name: string, secrets: string[]) => {
    const svc = await startTaskService(
      {
        name,
        coordinatorUrl: h.api.baseUrl,
        callbackToken: async () => h.api.idp.service(),
        auth: { mode: 'jwks', issuer: h.api.idp.issuer, audience: [h.api.idp.taskServiceAudience] },
        signingSecrets: () => secrets,
        stageSeconds: 0.2,
        publishSeconds: 0.1,
        progressSteps: 1,
        failAt: [],
      },
      { port: 0, host: '127.0.0.1' },
    );
    running.push(svc);
    return svc;
  };
  const register = async (name: string, url: string) => {
    const res = await h.api.call('POST', '/task-services', { body: { name, url } });
    expect(res.status).toBe(200);
    registered.push(res.body.item_id);
    return res.body as { item_id: string; secret: string; [k: string]: unknown };
  };
  /** The coordinator's kind of token, for requests a test sends a service itself. */
  const coordinatorToken = () =>
    h.api.idp.mint({ sub: 'coordinator', roles: ['service'], audience: h.api.idp.taskServiceAudience });
  const postTask = (url: string, raw: string, headers: Record<string, string | undefined>) =>
    fetch(`${url}/tasks`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Bearer ${coordinatorToken()}`,
        ...(Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined)) as Record<
          string,
          string
        >),
      },
      body: raw,
    });

  beforeAll(async () => {
    h = await startReleaseHarness();
  });
  afterEach(async () => {
    for (const id of registered.splice(0))
      await h.api.call('PATCH', `/task-services/${id}`, { body: { enabled: false } });
    await Promise.all(running.splice(0).map((s) => s.stop()));
    await h.reset();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a service holding the secret its registration answered verifies every action of a release to published', async () => {
    const secrets: string[] = [];
    const svc = await start('signed', secrets);
    const reg = await register('signed', svc.url);
    expect(reg.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    // Shown once: no read answers it.
    const one = await h.api.call('GET', `/task-services/${reg.item_id}`);
    const list = await h.api.call('GET', '/task-services?limit=100');
    expect(one.body).not.toHaveProperty('secret');
    expect(list.text).not.toContain('whsec_');
    secrets.push(reg.secret);

    const rel = await h.createRelease();
    await h.waitForState(rel.item_id, 'staged');
    await h.api.call('POST', `/releases/${rel.item_id}/publish`);
    const done = await h.waitForState(rel.item_id, 'published');
    expect(done.tasks.map((t: any) => t.state)).toEqual(['published']);
    // Nor does any event.
    expect(JSON.stringify(await h.events(rel.item_id))).not.toContain('whsec_');
  });

  it('refuses, while its secret is not set yet, every action: the release fails naming the 401', async () => {
    const svc = await start('not-yet', []);
    await register('not-yet', svc.url);
    const rel = await h.createRelease();
    const failed = await h.waitForState(rel.item_id, 'failed');
    expect(failed.tasks[0].state).toBe('failed');
    expect(JSON.stringify(await h.events(rel.item_id))).toContain('answered status 401');
  });

  it('refuses a request signed for another service, one older than 5 minutes, and a replay', async () => {
    // Service A: a recording fake, so the test holds a request exactly as the coordinator signed it for A.
    const [a] = await h.addServices(1, { stageMs: 0 });
    const bSecrets: string[] = [];
    const b = await start('b', bSecrets);
    const regB = await register('b', b.url);
    bSecrets.push(regB.secret);
    const rel = await h.createRelease();
    await h.waitForState(rel.item_id, 'staged');

    const forA = a.fake.received.find((r) => r.action === 'get_status' || r.action === 'start');
    expect(forA?.webhook['webhook-signature']).toMatch(/^v1,/);
    // A's request, replayed at B within the 5 minutes: B's secret does not verify A's signature.
    const replayedAtB = await postTask(b.url, forA!.raw, forA!.webhook);
    expect(replayedAtB.status).toBe(401);
    expect(((await replayedAtB.json()) as { message: string }).message).toContain('No matching signature');

    // A correct signature for B, made 6 minutes ago: too old. The same made now: accepted, once.
    const taskB =
      rel.tasks.find((t: any) => t.service_name === 'b') ?? (await h.release(rel.item_id)).tasks[1];
    const body = JSON.stringify({
      action: 'get_status',
      task_id: taskB.kf_id,
      release_id: rel.item_id,
      studies: [],
    });
    const old = signatureHeaders([regB.secret], body, new FakeClock(Date.now() - 6 * 60_000));
    const tooOld = await postTask(b.url, body, old ?? {});
    expect(tooOld.status).toBe(401);
    expect(((await tooOld.json()) as { message: string }).message).toContain('too old');
    const fresh = signatureHeaders([regB.secret], body) ?? {};
    expect((await postTask(b.url, body, fresh)).status).toBe(200);
    const replay = await postTask(b.url, body, fresh);
    expect(replay.status).toBe(401);
    expect(((await replay.json()) as { message: string }).message).toContain('replayed');
    // Unsigned: refused too (B checks signatures), though the bearer token is good.
    expect((await postTask(b.url, body, {})).status).toBe(401);
  });

  it('a service configured with another service’s secret refuses the coordinator: its task fails', async () => {
    const aSecrets: string[] = [];
    const a = await start('a', aSecrets);
    const regA = await register('a', a.url);
    aSecrets.push(regA.secret);
    const bSecrets: string[] = [];
    const b = await start('b', bSecrets);
    await register('b', b.url);
    bSecrets.push(regA.secret); // the wrong one
    const rel = await h.createRelease();
    const failed = await h.waitForState(rel.item_id, 'failed');
    const events = (await h.events(rel.item_id)).map((e: any) => e.message).join('\n');
    expect(events).toContain('task service "b"');
    expect(events).toContain('answered status 401');
    expect(failed.tasks.find((t: any) => t.service_name === 'b').state).toBe('failed');
  });

  it('rotate-secret: both secrets sign during the grace period, the new one alone after grace 0', async () => {
    const [fake] = await h.addServices(1, { stageMs: 0, publishMs: 0 });
    const secrets: string[] = [];
    const svc = await start('rotating', secrets);
    const reg = await register('rotating', svc.url);
    secrets.push(reg.secret);
    const first = reg.secret;

    // Rotate with the default grace: 24 hours.
    const before = Date.now();
    const rotated = await h.api.call('POST', `/task-services/${reg.item_id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({ item_id: reg.item_id, secret: expect.stringMatching(/^whsec_/) });
    const second = rotated.body.secret as string;
    expect(second).not.toBe(first);
    const until = Date.parse(rotated.body.previous_secret_expires_at);
    expect(until - before).toBeGreaterThanOrEqual(86_400_000 - 1000);
    expect(until - before).toBeLessThanOrEqual(86_400_000 + 60_000);
    expect((await h.api.call('GET', `/task-services/${reg.item_id}`)).body).not.toHaveProperty('secret');

    // The service still holds the old secret: it verifies (the coordinator signs with both).
    const rel = await h.createRelease();
    await h.waitForState(rel.item_id, 'staged');
    // It switches to the new one: publishing verifies too.
    secrets.splice(0, 1, second);
    await h.api.call('POST', `/releases/${rel.item_id}/publish`);
    await h.waitForState(rel.item_id, 'published');

    // The fake (never rotated) got one signature per action; rotate it and the next action carries two.
    const fakeSecret = (await h.api.call('POST', `/task-services/${fake.id}/rotate-secret`)).body
      .secret as string;
    const rel2 = await h.createRelease();
    await h.waitForState(rel2.item_id, 'staged');
    const signed = fake.fake.received.filter((r) => r.releaseId === rel2.item_id)[0];
    expect(signed.webhook['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(() =>
      new Webhook(fakeSecret).verify(signed.raw, signed.webhook as Record<string, string>),
    ).not.toThrow();
    await h.api.call('DELETE', `/releases/${rel2.item_id}`);
    await h.waitForState(rel2.item_id, 'canceled');

    // Grace 0: the old secret (second) stops at once; a service still holding it refuses the next release.
    const now = await h.api.call('POST', `/task-services/${reg.item_id}/rotate-secret`, {
      body: { grace_seconds: 0 },
    });
    expect(now.status).toBe(200);
    expect(now.body.previous_secret_expires_at).toBeNull();
    const rel3 = await h.createRelease();
    await h.waitForState(rel3.item_id, 'failed');
    expect(JSON.stringify(await h.events(rel3.item_id))).toContain('answered status 401');
  });

  it('rotate-secret is for admins, with a valid grace, on a known service; delete takes the secret away', async () => {
    const svc = await start('plain', []);
    const reg = await register('plain', svc.url);
    const path = `/task-services/${reg.item_id}/rotate-secret`;
    expect((await h.api.call('POST', path, { token: h.api.idp.service() })).status).toBe(403);
    const bad = await h.api.call('POST', path, { body: { grace_seconds: -1 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.fields).toHaveProperty('grace_seconds');
    expect((await h.api.call('POST', path, { body: { grace_seconds: 604_801 } })).status).toBe(400);
    expect((await h.api.call('POST', path, { body: { other: 1 } })).status).toBe(400);
    expect((await h.api.call('POST', '/task-services/TS_00000000/rotate-secret')).status).toBe(404);

    const credentials = async () =>
      (
        await h.api.doc.send(
          new ScanCommand({
            TableName: h.api.tables.COORDINATOR_TABLE,
            FilterExpression: 'pk = :pk AND sk = :sk',
            ExpressionAttributeValues: { ':pk': `TS#${reg.item_id}`, ':sk': 'CRED' },
          }),
        )
      ).Items ?? [];
    expect(await credentials()).toHaveLength(1);
    expect((await h.api.call('DELETE', `/task-services/${reg.item_id}`)).status).toBe(200);
    registered.splice(registered.indexOf(reg.item_id), 1);
    expect(await credentials()).toEqual([]);
  });
});
