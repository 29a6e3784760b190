import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningTaskService, startTaskService } from '#examples/task-service/service.js';
import { APP_VERSION } from '#functions/shared/version.js';
import {
  freeStackPorts,
  type StackPorts,
  type StackProcess,
  startStackProcess,
} from '#local/stack-process.js';
import { dynamoJvms, killHard, stackPid, eventually as waitFor } from '#test/helpers/local-stack-process.js';

/**
 * `npm start` as a user runs it: `npx tsx bin/local.ts` in a child process (local/stack-process.ts), with random free ports and a temporary
 * DATA_DIR. Two starts in all (each starts its own DynamoDB Local JVM); the second proves the data is kept, and its
 * JVM must end when its Node process alone is killed. A third start, refused for a port taken, names the taker.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'local-stack-'));

// The study source: a Kids First dataservice stand-in whose answers the test can hold back, so the readiness gate
// (GET /health is 503 until the first study sync is done) is observable without timing luck.
const STUDIES = ['SD_AAAAAAAA', 'SD_BBBBBBBB', 'SD_CCCCCCCC'].map((kf_id, i) => ({
  kf_id,
  name: `Study ${i}`,
  version: '1.0.0',
  visible: true,
  created_at: '2020-01-01T00:00:00.000000+00:00',
}));
let releaseSource: () => void = () => {};
let sourceHeld = Promise.resolve();
let source: Server;
let sourceUrl = '';

let stack: StackProcess | undefined;

function startStack(reuse?: StackPorts): Promise<StackProcess> {
  return (reuse ? Promise.resolve(reuse) : freeStackPorts()).then((ports) =>
    startStackProcess({
      dataDir,
      ports,
      launcher: 'npx',
      env: {
        STUDIES_SOURCE: sourceUrl,
        STUDY_SYNC_RETRY_SECONDS: '1',
        LOG_LEVEL: 'warn',
      },
      // Its own process group, so cleanup can reach the whole tree if a test fails half-way.
      detached: true,
    }),
  );
}

/** Polls until `probe` returns a value (connection errors count as "not yet"). */
const eventually = <T>(probe: () => Promise<T | undefined>, what: string, ms = 90_000) =>
  waitFor(probe, what, ms, () => stack?.output() ?? '');

async function json(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

async function devToken(body: Record<string, unknown>): Promise<string> {
  const res = await json(`${stack!.urls.idp}/dev/tokens`, { method: 'POST', body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  return res.body.access_token;
}

/** java processes started for this test's data dir (DynamoDB Local runs with -dbPath <DATA_DIR>/dynamodb). */
const javaProcessesOfThisTest = () => dynamoJvms(dataDir);

/** SIGTERM to the stack's own process (DATA_DIR/local.pid: npx does not forward signals to its children). */
async function stopStack(s: StackProcess): Promise<number | null> {
  return (await s.stop()).code;
}

beforeAll(async () => {
  source = createServer(async (req, res) => {
    await sourceHeld;
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'GET' && path.endsWith('/studies')) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({ results: STUDIES, _links: {}, _status: { code: 200 }, total: STUDIES.length }),
      );
      return;
    }
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end('{}');
  });
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', () => r()));
  sourceUrl = `http://127.0.0.1:${(source.address() as { port: number }).port}`;
});

afterAll(async () => {
  if (stack && stack.child.exitCode === null && stack.child.signalCode === null) {
    try {
      process.kill(-stack.child.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
    await stack.exited;
  }
  releaseSource();
  source.closeAllConnections();
  await new Promise<void>((r) => source.close(() => r()));
  rmSync(dataDir, { recursive: true, force: true });
});

let eventId = '';
let firstAdminToken = '';
/** A task service registered with create_client, and the client the coordinator made for it. */
let created: { id: string; clientId: string; clientSecret: string } | undefined;
let referenceService: RunningTaskService | undefined;
const clientToken = (id: string, secret: string) =>
  json(`${stack!.urls.idp}/oauth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: id,
      client_secret: secret,
    }).toString(),
  });

describe('npm start (bin/local.ts)', () => {
  it('answers /health 503 until the first study sync is done, then 200 without a token', async () => {
    sourceHeld = new Promise<void>((r) => {
      releaseSource = r;
    });
    stack = await startStack();
    const starting = await eventually(async () => {
      const res = await json(`${stack!.urls.coordinator}/health`);
      return res;
    }, 'the coordinator to listen');
    expect(starting.status).toBe(503);
    expect(starting.body.error.code).toBe('not_ready');
    expect(starting.body.error.message).toContain('first study sync');
    releaseSource();
    const ready = await eventually(async () => {
      const res = await json(`${stack!.urls.coordinator}/health`);
      return res.status === 200 ? res : undefined;
    }, '/health 200');
    expect(ready.body).toEqual({ status: 'ok', version: APP_VERSION });
  }, 120_000);

  it('prints every base URL and an admin token, and writes the token to DATA_DIR/admin-token', async () => {
    const printed = await eventually(
      async () => (stack!.output().includes('Admin token') ? stack!.output() : undefined),
      'the banner',
      // The banner also waits for the dashboard build, which runs alongside the start-up.
      60_000,
    );
    const ui = `http://127.0.0.1:${stack!.ports.UI_PORT}`;
    for (const url of [
      stack!.urls.coordinator,
      stack!.urls.idp,
      `http://127.0.0.1:${stack!.ports.FILES_PORT}`,
      ui,
    ])
      expect(printed).toContain(url);
    expect(printed).toContain(`handlers: ${process.env.LOCAL_HANDLERS ?? 'source'}`);
    expect(printed).toContain(`http://127.0.0.1:${stack!.ports.DYNAMODB_PORT}`);
    firstAdminToken = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    expect(printed).toContain(firstAdminToken);
    const claims = await json(`${stack!.urls.idp}/oauth/token/verify?audience=release-coordinator`, {
      headers: bearer(firstAdminToken),
    });
    expect(claims.body).toMatchObject({ sub: 'local-admin', roles: ['admin'] });
  });

  it('serves the dashboard on UI_PORT with its runtime config, and lets its origin call the APIs (CORS)', async () => {
    const ui = `http://127.0.0.1:${stack!.ports.UI_PORT}`;
    const page = await fetch(`${ui}/releases/RE_AAAAAAAA`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="app">');
    const config = await json(`${ui}/config.json`);
    expect(config.body).toEqual({
      coordinatorUrl: stack!.urls.coordinator,
      filesUrl: `http://127.0.0.1:${stack!.ports.FILES_PORT}`,
      authority: stack!.urls.idp,
      clientId: 'dashboard',
      scope: 'openid',
      logoutUrl: null,
      pollMs: 1000,
      // The registration form: a client is optional locally, and the stack can make one.
      taskServices: { clientRequired: false, createClient: true },
    });
    const preflight = await fetch(`${stack!.urls.coordinator}/releases`, {
      method: 'OPTIONS',
      headers: { Origin: ui, 'Access-Control-Request-Method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(ui);
    const discovery = await fetch(`${stack!.urls.idp}/.well-known/openid-configuration`, {
      headers: { Origin: ui },
    });
    expect(discovery.headers.get('access-control-allow-origin')).toBe(ui);
  });

  it('serves GET /studies with a minted token (the synced sample) and 401 without one', async () => {
    const anonymous = await json(`${stack!.urls.coordinator}/studies`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    const token = await devToken({ sub: 'reader', roles: [], groups: [], expires_in: 300 });
    const studies = await json(`${stack!.urls.coordinator}/studies?limit=2`, { headers: bearer(token) });
    expect(studies.status).toBe(200);
    expect(studies.body.count).toBe(STUDIES.length);
    expect(studies.body.results).toHaveLength(2);
    expect(studies.body.next).toMatch(new RegExp(`^${stack!.urls.coordinator}/studies\\?`));
  });

  it('runs the identity provider: discovery, client credentials for the coordinator, verify; the coordinator token is refused by its own API', async () => {
    const discovery = await json(`${stack!.urls.idp}/.well-known/openid-configuration`);
    expect(discovery.body.issuer).toBe(stack!.urls.idp);
    const cc = await json(`${stack!.urls.idp}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&client_id=coordinator&client_secret=coordinator-local-secret',
    });
    expect(cc.status).toBe(200);
    const verified = await json(`${stack!.urls.idp}/oauth/token/verify`, {
      headers: bearer(cc.body.access_token),
    });
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({
      sub: 'coordinator',
      client_id: 'coordinator',
      roles: ['service'],
      aud: 'task-services',
    });
    expect((await json(`${stack!.urls.idp}/oauth/token/verify`)).status).toBe(401);
    // It checks the audience: a token for the APIs is not the coordinator's, unless that audience is named.
    const forTheApis = await devToken({ sub: 'svc', roles: ['service'], groups: [], expires_in: 300 });
    expect(
      (await json(`${stack!.urls.idp}/oauth/token/verify`, { headers: bearer(forTheApis) })).status,
    ).toBe(401);
    const named = await json(`${stack!.urls.idp}/oauth/token/verify?audience=release-coordinator`, {
      headers: bearer(forTheApis),
    });
    expect(named.status).toBe(200);
    // What a task service receives from the coordinator cannot be replayed against the coordinator.
    const replay = await json(`${stack!.urls.coordinator}/releases`, {
      headers: bearer(cc.body.access_token),
    });
    expect(replay.status).toBe(401);
  });

  it('registers a task service with a client of its own (create_client): only that client reports for it', async () => {
    referenceService = await startTaskService(
      {
        name: 'own client',
        auth: { mode: 'none' },
        stageSeconds: 1,
        publishSeconds: 1,
        progressSteps: 1,
        failAt: [],
      },
      { port: 0, host: '127.0.0.1' },
    );
    const admin = await devToken({ sub: 'ops', roles: ['admin'], groups: [], expires_in: 300 });
    const reg = await json(`${stack!.urls.coordinator}/task-services`, {
      method: 'POST',
      headers: { ...bearer(admin), 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'own client', url: referenceService.url, create_client: true }),
    });
    expect(reg.status).toBe(200);
    expect(reg.body).toMatchObject({
      secret: expect.stringMatching(/^whsec_/),
      client_id: expect.stringMatching(/^ts-/),
      client_secret: expect.any(String),
    });
    created = { id: reg.body.item_id, clientId: reg.body.client_id, clientSecret: reg.body.client_secret };
    const read = await json(`${stack!.urls.coordinator}/task-services/${created.id}`, {
      headers: bearer(admin),
    });
    expect(read.body.client_id).toBe(created.clientId);
    expect(read.body).not.toHaveProperty('client_secret');
    expect(read.body).not.toHaveProperty('secret');

    const own = await clientToken(created.clientId, created.clientSecret);
    expect(own.status).toBe(200);
    const shared = await clientToken('task-service', 'task-service-local-secret');
    const event = (token: string) =>
      json(`${stack!.urls.coordinator}/events`, {
        method: 'POST',
        headers: { ...bearer(token), 'Content-Type': 'application/json' },
        body: JSON.stringify({ event_type: 'info', message: 'from the service', task_service: created!.id }),
      });
    expect((await event(own.body.access_token)).status).toBe(200);
    expect((await event(shared.body.access_token)).status).toBe(403);
  });

  it('quarantines that service at the local identity provider too: its secret ends; the release hands out a new one', async () => {
    const admin = await devToken({ sub: 'ops', roles: ['admin'], groups: [], expires_in: 300 });
    const before = await clientToken(created!.clientId, created!.clientSecret);
    const q = await json(`${stack!.urls.coordinator}/task-services/${created!.id}/quarantine`, {
      method: 'POST',
      headers: { ...bearer(admin), 'Content-Type': 'application/json' },
      body: JSON.stringify({ reason: 'drill' }),
    });
    expect(q.status).toBe(200);
    expect(q.body.client).toEqual({ client_id: created!.clientId, action: 'secret_replaced' });
    // No new token with the old secret; a token minted before is refused by the coordinator for this service.
    expect((await clientToken(created!.clientId, created!.clientSecret)).status).toBe(401);
    const refused = await json(`${stack!.urls.coordinator}/events`, {
      method: 'POST',
      headers: { ...bearer(before.body.access_token), 'Content-Type': 'application/json' },
      body: JSON.stringify({ event_type: 'info', message: 'still here', task_service: created!.id }),
    });
    expect(refused.status).toBe(403);
    const released = await json(`${stack!.urls.coordinator}/task-services/${created!.id}/quarantine`, {
      method: 'DELETE',
      headers: bearer(admin),
    });
    expect(released.status).toBe(200);
    expect(released.body).toMatchObject({ quarantined: false, client_secret: expect.any(String) });
    created = { ...created!, clientSecret: released.body.client_secret };
    expect((await clientToken(created.clientId, created.clientSecret)).status).toBe(200);
  });

  it('stores records in DynamoDB Local under DATA_DIR', async () => {
    const created = await json(`${stack!.urls.coordinator}/events`, {
      method: 'POST',
      headers: { ...bearer(firstAdminToken), 'Content-Type': 'application/json' },
      body: JSON.stringify({ event_type: 'info', message: 'kept across restarts' }),
    });
    expect(created.status).toBe(200);
    eventId = created.body.item_id;
    expect(eventId).toMatch(/^EV_/);
    expect(existsSync(join(dataDir, 'dynamodb', 'shared-local-instance.db'))).toBe(true);
  });

  it('stops every child process on SIGTERM and exits 0', async () => {
    expect(javaProcessesOfThisTest()).toHaveLength(1);
    const code = await stopStack(stack!);
    expect(code).toBe(0);
    expect(javaProcessesOfThisTest()).toEqual([]);
    expect(existsSync(join(dataDir, 'local.pid'))).toBe(false);
    await expect(fetch(`${stack!.urls.coordinator}/health`)).rejects.toThrow();
    await expect(fetch(`http://127.0.0.1:${stack!.ports.DYNAMODB_PORT}`)).rejects.toThrow();
  }, 60_000);

  it('keeps the data and the signing key on a second start with the same DATA_DIR', async () => {
    // The same ports, as with `npm start`: the issuer (http://127.0.0.1:<IDP_PORT>) is part of every token.
    stack = await startStack(stack!.ports);
    await eventually(async () => {
      const res = await json(`${stack!.urls.coordinator}/health`);
      return res.status === 200 ? res : undefined;
    }, '/health 200 after restart');
    // The token minted by the first run still verifies: the signing key was kept.
    const kept = await json(`${stack!.urls.coordinator}/events/${eventId}`, {
      headers: bearer(firstAdminToken),
    });
    expect(kept.status).toBe(200);
    expect(kept.body.message).toBe('kept across restarts');
    const studies = await json(`${stack!.urls.coordinator}/studies`, { headers: bearer(firstAdminToken) });
    expect(studies.body.count).toBe(STUDIES.length);
    // The client made for a task service survives too; deleting the service deletes it.
    expect((await clientToken(created!.clientId, created!.clientSecret)).status).toBe(200);
    const removed = await fetch(`${stack!.urls.coordinator}/task-services/${created!.id}`, {
      method: 'DELETE',
      headers: bearer(firstAdminToken),
    });
    expect(removed.status).toBe(200);
    expect((await clientToken(created!.clientId, created!.clientSecret)).status).toBe(401);
    await referenceService?.stop();
  }, 120_000);

  it('ends its DynamoDB Local within 5 s when only its Node process is killed (SIGKILL)', async () => {
    expect(javaProcessesOfThisTest()).toHaveLength(1);
    const killedAt = Date.now();
    killHard(stackPid(dataDir));
    await waitFor(async () => (javaProcessesOfThisTest().length ? undefined : true), 'the JVM to end', 5000);
    expect(Date.now() - killedAt).toBeLessThan(5000);
    await stack!.exited;
  }, 30_000);

  it('names the process that holds a port it needs', async () => {
    // A port of its own (the stack's could be taken by anyone once its JVM let it go).
    const holder = createNetServer();
    await new Promise<void>((r) => holder.listen(0, '0.0.0.0', () => r()));
    const port = (holder.address() as { port: number }).port;
    try {
      const refused = await startStack({ ...(await freeStackPorts()), DYNAMODB_PORT: port });
      expect((await refused.exited).code).not.toBe(0);
      expect(refused.output()).toContain(
        `Port ${port} (DYNAMODB_PORT) is already in use by process ${process.pid} (`,
      );
      expect(javaProcessesOfThisTest()).toEqual([]);
    } finally {
      await new Promise<void>((r) => holder.close(() => r()));
    }
  }, 60_000);
});
