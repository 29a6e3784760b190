import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoIdempotencyStore } from '#functions/adapters/dynamodb/idempotency.js';
import { FakeClock } from '#functions/shared/clock.js';
import { IDEMPOTENCY_TTL_MS, idempotent } from '#functions/shared/idempotency.js';
import { type CoordinatorApi, seedStudies, startCoordinatorApi } from '#test/helpers/coordinator-api.js';
import { type FakeTaskService, startFakeTaskService } from '#test/helpers/fake-task-service/index.js';

/**
 * Idempotency-Key on the coordinator's creates, through the real HTTP path and DynamoDB Local: retries of one create
 * make one resource, a reused key with another body is refused, a retry during the first request is a 409.
 */
let api: CoordinatorApi;
let fake: FakeTaskService;
const STUDY = 'SD_1DEMP0TS';

beforeAll(async () => {
  api = await startCoordinatorApi();
  fake = await startFakeTaskService();
  await seedStudies(api, [STUDY]);
  const res = await api.call('POST', '/task-services', {
    body: { name: 'idem', description: '', author: 'a', url: fake.url, enabled: true },
  });
  expect(res.status).toBe(200);
});
afterAll(async () => {
  await fake?.stop();
  await api?.close();
});

const releaseBody = (name: string) => ({ name, studies: [STUDY] });
const withKey = (key: string, extra: Record<string, string> = {}) => ({ 'Idempotency-Key': key, ...extra });

async function releasesNamed(name: string): Promise<number> {
  let next: string | null = `/releases?limit=100`;
  let n = 0;
  while (next) {
    const page = await api.call('GET', next.replace(api.baseUrl, ''));
    expect(page.status).toBe(200);
    n += page.body.results.filter((r: { name: string }) => r.name === name).length;
    next = page.body.next;
  }
  return n;
}

describe('POST /releases with Idempotency-Key', () => {
  it('20 concurrent retries with one key and one body make exactly one release', async () => {
    const name = `concurrent-${randomUUID()}`;
    const key = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        api.call('POST', '/releases', { body: releaseBody(name), headers: withKey(key) }),
      ),
    );
    // Each answer is the first one (200, replayed or not) or "still running" (409); never a second release.
    for (const a of answers) expect([200, 409]).toContain(a.status);
    const created = answers.filter((a) => a.status === 200);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((a) => a.body.item_id)).size).toBe(1);
    expect(created.filter((a) => a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    for (const a of answers.filter((x) => x.status === 409)) {
      expect(a.body.error.code).toBe('idempotency_in_progress');
      expect(a.headers.get('retry-after')).toBe('1');
    }
    expect(await releasesNamed(name)).toBe(1);

    // Once the first has finished, every retry is its answer, replayed.
    const again = await api.call('POST', '/releases', { body: releaseBody(name), headers: withKey(key) });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(created[0].body);
    expect(await releasesNamed(name)).toBe(1);
  });

  it('a retry gets the first status and body with Idempotent-Replayed: true, and writes nothing', async () => {
    const name = `replay-${randomUUID()}`;
    const key = randomUUID();
    const first = await api.call('POST', '/releases', { body: releaseBody(name), headers: withKey(key) });
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const events = await api.call('GET', `/events?release=${first.body.item_id}`);
    // The body's key order does not matter: same JSON value, same request.
    const retry = await api.call('POST', '/releases', {
      body: { studies: [STUDY], name },
      headers: withKey(key),
    });
    expect(retry.status).toBe(first.status);
    expect(retry.text).toBe(first.text);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await releasesNamed(name)).toBe(1);
    const eventsAfter = await api.call('GET', `/events?release=${first.body.item_id}`);
    expect(eventsAfter.body.count).toBe(events.body.count);
  });

  it('the same key with a different body is a 422, and creates nothing', async () => {
    const key = randomUUID();
    const name = `mismatch-${randomUUID()}`;
    expect(
      (await api.call('POST', '/releases', { body: releaseBody(name), headers: withKey(key) })).status,
    ).toBe(200);
    const other = await api.call('POST', '/releases', {
      body: releaseBody(`${name}-changed`),
      headers: withKey(key),
    });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    expect(await releasesNamed(`${name}-changed`)).toBe(0);
  });

  it('keys are scoped to the caller: another client with the same key gets its own release', async () => {
    const key = randomUUID();
    const name = `scoped-${randomUUID()}`;
    const mine = await api.call('POST', '/releases', { body: releaseBody(name), headers: withKey(key) });
    const otherAdmin = api.idp.mint({ sub: 'another-admin', roles: ['admin'] });
    const theirs = await api.call('POST', '/releases', {
      body: releaseBody(name),
      headers: withKey(key),
      token: otherAdmin,
    });
    expect(mine.status).toBe(200);
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.item_id).not.toBe(mine.body.item_id);
    expect(await releasesNamed(name)).toBe(2);
  });

  it('a failed request stores nothing: a corrected retry with the same key runs', async () => {
    const key = randomUUID();
    const name = `corrected-${randomUUID()}`;
    const bad = await api.call('POST', '/releases', {
      body: { name, studies: ['SD_N0THERE0'] },
      headers: withKey(key),
    });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
    // An error is not replayed, and the key is free again (a different body is not a 422 after an error).
    const good = await api.call('POST', '/releases', { body: releaseBody(name), headers: withKey(key) });
    expect(good.status).toBe(200);
    expect(good.headers.get('idempotent-replayed')).toBeNull();
  });

  it('an invalid key is a 400 that names the header', async () => {
    const res = await api.call('POST', '/releases', {
      body: releaseBody('bad-key'),
      headers: withKey('x'.repeat(256)),
    });
    expect(res.status).toBe(400);
    expect(res.body.error.fields).toHaveProperty('Idempotency-Key');
  });

  it('without a key, two identical POSTs are two releases (keys are opt-in)', async () => {
    const name = `nokey-${randomUUID()}`;
    await api.call('POST', '/releases', { body: releaseBody(name) });
    await api.call('POST', '/releases', { body: releaseBody(name) });
    expect(await releasesNamed(name)).toBe(2);
  });
});

describe('a retry while the first request still runs', () => {
  let gate: Server;
  let gateUrl = '';
  let open: () => void = () => {};
  let reached: () => void = () => {};
  let probed: Promise<void>;

  beforeAll(async () => {
    // A task service whose GET /status (the creation probe) answers only when the test says so.
    let opened = new Promise<void>((r) => {
      open = r;
    });
    probed = new Promise<void>((r) => {
      reached = r;
    });
    gate = createServer(async (_req, res) => {
      reached();
      await opened;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ name: 'gated', message: 'ready', version: '1' }));
    });
    await new Promise<void>((r) => gate.listen(0, '127.0.0.1', r));
    gateUrl = `http://127.0.0.1:${(gate.address() as AddressInfo).port}`;
    opened = opened.then(() => {});
  });
  afterAll(async () => {
    open();
    gate?.closeAllConnections?.();
    await new Promise<void>((r) => gate?.close(() => r()));
  });

  it('is a 409 while the first runs, and the first answer, replayed, once it has finished', async () => {
    const key = randomUUID();
    const body = { name: `gated-${randomUUID().slice(0, 8)}`, description: '', author: 'a', url: gateUrl };
    const first = api.call('POST', '/task-services', { body, headers: withKey(key) });
    await probed; // the first request holds the key and waits on the probe
    const during = await api.call('POST', '/task-services', { body, headers: withKey(key) });
    expect(during.status).toBe(409);
    expect(during.body.error.code).toBe('idempotency_in_progress');
    open();
    const done = await first;
    expect(done.status).toBe(200);
    const after = await api.call('POST', '/task-services', { body, headers: withKey(key) });
    expect(after.status).toBe(200);
    expect(after.headers.get('idempotent-replayed')).toBe('true');
    expect(after.body).toEqual(done.body);
  });
});

describe('POST /events and POST /release-notes with Idempotency-Key', () => {
  it('a retried event is stored once', async () => {
    const rel = await api.call('POST', '/releases', { body: releaseBody(`ev-${randomUUID()}`) });
    const key = randomUUID();
    const body = { event_type: 'info', message: `hello ${key}`, release: rel.body.item_id };
    const a = await api.call('POST', '/events', { body, headers: withKey(key) });
    const b = await api.call('POST', '/events', { body, headers: withKey(key) });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(b.body.item_id).toBe(a.body.item_id);
    const list = await api.call('GET', `/events?release=${rel.body.item_id}&limit=100`);
    expect(list.body.results.filter((e: { message: string }) => e.message === body.message)).toHaveLength(1);
  });

  it('a retried release note is stored once', async () => {
    const rel = await api.call('POST', '/releases', { body: releaseBody(`rn-${randomUUID()}`) });
    const key = randomUUID();
    const body = { description: `note ${key}`, release: rel.body.item_id };
    const a = await api.call('POST', '/release-notes', { body, headers: withKey(key) });
    const b = await api.call('POST', '/release-notes', { body, headers: withKey(key) });
    expect(a.status).toBe(200);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(b.body).toEqual(a.body);
    const r = await api.call('GET', `/releases/${rel.body.item_id}`);
    expect(r.body.notes).toHaveLength(1);
  });
});

describe('key lifetime (the real store on DynamoDB Local, a controlled clock)', () => {
  it('answers are replayed for 24 hours, then the key is free again', async () => {
    const store = new DynamoIdempotencyStore(api.doc, api.tables.COORDINATOR_TABLE);
    const clock = new FakeClock();
    let runs = 0;
    const req = {
      key: randomUUID(),
      identity: 'client',
      method: 'POST',
      path: '/releases',
      body: { a: 1 },
      remainingMs: 30_000,
    };
    const run = async () => ({ status: 200, body: { run: ++runs } });
    expect(await idempotent(store, req, run, clock)).toEqual({ status: 200, body: { run: 1 } });
    clock.advance(IDEMPOTENCY_TTL_MS - 1);
    expect(await idempotent(store, req, run, clock)).toMatchObject({
      body: { run: 1 },
      headers: { 'Idempotent-Replayed': 'true' },
    });
    clock.advance(2);
    expect(await idempotent(store, req, run, clock)).toEqual({ status: 200, body: { run: 2 } });
  });

  it('an in-progress claim whose request can no longer be running is taken over', async () => {
    const store = new DynamoIdempotencyStore(api.doc, api.tables.COORDINATOR_TABLE);
    const clock = new FakeClock();
    const req = { key: randomUUID(), identity: 'c', method: 'POST', path: '/x', body: {}, remainingMs: 1000 };
    let release: () => void = () => {};
    let running: () => void = () => {};
    const claimed = new Promise<void>((r) => {
      running = r;
    });
    const stuck = idempotent(
      store,
      req,
      () =>
        new Promise<{ status: number }>((r) => {
          running(); // it runs only once it holds the key
          release = () => r({ status: 200 });
        }),
      clock,
    );
    await claimed;
    await expect(idempotent(store, req, async () => ({ status: 201 }), clock)).rejects.toMatchObject({
      status: 409,
    });
    clock.advance(1001);
    expect(await idempotent(store, req, async () => ({ status: 201 }), clock)).toEqual({ status: 201 });
    release();
    await stuck;
    // The later holder's answer stands.
    expect(await idempotent(store, req, async () => ({ status: 500 }), clock)).toMatchObject({ status: 201 });
  });

  /** Starts a request that holds its claim until `finish` is called; resolves once it runs. */
  async function hanging(
    store: DynamoIdempotencyStore,
    req: Parameters<typeof idempotent>[1],
    clock: FakeClock,
  ) {
    let finish: (outcome: { status: number; body: unknown } | Error) => void = () => {};
    let running: () => void = () => {};
    const started = new Promise<void>((r) => {
      running = r;
    });
    const done = idempotent(
      store,
      req,
      () =>
        new Promise<{ status: number; body: unknown }>((resolve, reject) => {
          running();
          finish = (o) => (o instanceof Error ? reject(o) : resolve(o));
        }),
      clock,
    );
    await started;
    return { finish: (o: { status: number; body: unknown } | Error) => finish(o), done };
  }

  it('a late complete is matched to its own claim: it cannot answer for the request that took the key over', async () => {
    const store = new DynamoIdempotencyStore(api.doc, api.tables.COORDINATOR_TABLE);
    const clock = new FakeClock();
    const req = {
      key: randomUUID(),
      identity: 'c',
      method: 'POST',
      path: '/x',
      body: { same: 1 },
      remainingMs: 1000,
    };
    const first = await hanging(store, req, clock);
    clock.advance(1001); // the first request's function has timed out, as far as the key knows
    const second = await hanging(store, req, clock); // a retry with the same body takes the key over, and runs
    first.finish({ status: 200, body: { from: 'first' } });
    await first.done;
    // The second still runs: a retry waits for it (409) instead of getting the first, abandoned answer.
    await expect(idempotent(store, req, async () => ({ status: 500 }), clock)).rejects.toMatchObject({
      status: 409,
    });
    second.finish({ status: 201, body: { from: 'second' } });
    await second.done;
    expect(await idempotent(store, req, async () => ({ status: 500 }), clock)).toMatchObject({
      status: 201,
      body: { from: 'second' },
    });
  });

  it('a late failure releases only its own claim, never the claim that took the key over', async () => {
    const store = new DynamoIdempotencyStore(api.doc, api.tables.COORDINATOR_TABLE);
    const clock = new FakeClock();
    const req = { key: randomUUID(), identity: 'c', method: 'POST', path: '/y', body: {}, remainingMs: 1000 };
    const first = await hanging(store, req, clock);
    clock.advance(1001);
    const second = await hanging(store, req, clock);
    first.finish(new Error('the first request failed, late'));
    await expect(first.done).rejects.toThrow(/late/);
    let ran = false;
    await expect(
      idempotent(
        store,
        req,
        async () => {
          ran = true;
          return { status: 201, body: {} };
        },
        clock,
      ),
    ).rejects.toMatchObject({ status: 409 });
    expect(ran).toBe(false);
    second.finish({ status: 201, body: { from: 'second' } });
    await second.done;
  });
});
