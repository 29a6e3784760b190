import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freeStackPorts, type StackPorts } from '#local/stack-process.js';
import {
  dynamoJvms,
  eventually,
  isAlive,
  killHard,
  type StackProcess,
  spawnStack,
  stackPid,
} from '#test/helpers/local-stack-process.js';

/**
 * The kill -9 drill (docs/orchestration.md): the whole local stack, its Node process and the DynamoDB Local JVM, is
 * killed while one release is polling, one is in the middle of its publish call, one in the middle of its cancel
 * call, and one of more tasks than one transaction holds (created, and moved by each round, in several) in the
 * middle of its publish round. `npm start` again on the same DATA_DIR, with nobody doing anything else, brings every
 * release to its end: staged, published, canceled, published, each task of the large one moved once.
 *
 * The task service is in this process, over real HTTP, so it outlives the stack. It answers `publish` and `cancel`
 * only when the test lets it, which is how those calls are caught in flight.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'kill-drill-'));
const ENV = {
  POLL_SECONDS: '1',
  // Long enough that the held publish and cancel calls are still in flight when the stack dies.
  ACTION_TIMEOUT_SECONDS: '60',
  RECONCILE_SECONDS: '5',
  HEALTH_INTERVAL_SECONDS: '3600',
};

interface Task {
  releaseId: string;
  state: string;
}
const tasks = new Map<string, Task>();
/** Registrations of the drill service beyond the first: the large release has one task more than this. */
const LARGE = 110;
/** Releases whose work is done: get_status answers staged (running) or published (publishing). */
const finished = new Set<string>();
/** Releases whose publish / cancel calls are held open. */
const holdPublish = new Set<string>();
const holdCancel = new Set<string>();
const received: { action: string; releaseId: string }[] = [];
let service: Server;
let serviceUrl = '';

function reply(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

function handle(req: IncomingMessage, res: ServerResponse, body: any) {
  if (req.method === 'GET' && req.url === '/status') return reply(res, 200, { name: 'drill service' });
  if (req.method !== 'POST' || req.url !== '/tasks') return reply(res, 404, {});
  const { action, task_id: taskId, release_id: releaseId } = body;
  received.push({ action, releaseId });
  let task = tasks.get(taskId);
  if (!task) {
    task = { releaseId, state: 'pending' };
    tasks.set(taskId, task);
  }
  const answer = () =>
    reply(res, 200, {
      name: 'drill service',
      kf_id: taskId,
      release_id: releaseId,
      state: task.state,
      progress: 0,
    });
  switch (action) {
    case 'initialize':
      task.state = 'pending';
      return answer();
    case 'start':
      task.state = 'running';
      return answer();
    case 'get_status':
      if (finished.has(releaseId) && task.state === 'running') task.state = 'staged';
      if (finished.has(releaseId) && task.state === 'publishing') task.state = 'published';
      return answer();
    case 'publish':
      if (holdPublish.has(releaseId)) return; // in flight until the caller goes away
      task.state = 'published';
      return answer();
    case 'cancel':
      if (holdCancel.has(releaseId)) return;
      task.state = 'canceled';
      return answer();
    default:
      return reply(res, 400, {});
  }
}

let stack: StackProcess | undefined;
// Every port the stack opens, the dashboard's included: a default one may be taken by another stack on the machine.
let ports: StackPorts;

async function json(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function startAndWait(): Promise<StackProcess> {
  const s = spawnStack(dataDir, ports, ENV);
  await eventually(
    async () => ((await json(`${s.url('COORDINATOR_PORT')}/health`)).status === 200 ? true : undefined),
    '/health 200',
    120_000,
    s.output,
  );
  return s;
}

let token = '';
const api = async (method: string, path: string, body?: unknown) =>
  json(`${stack!.url('COORDINATOR_PORT')}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
const stateOf = async (id: string) => (await api('GET', `/releases/${id}`)).body.state as string;
// Generous: a busy machine slows the stack down, and nothing here waits for a fixed time.
const waitForState = (id: string, state: string, ms = 60_000) =>
  eventually(
    async () => ((await stateOf(id)) === state ? true : undefined),
    `${id} to be ${state}`,
    ms,
    () => stack?.output() ?? '',
  );
const waitForCall = (action: string, releaseId: string) =>
  eventually(
    async () => (received.some((r) => r.action === action && r.releaseId === releaseId) ? true : undefined),
    `${action} of ${releaseId} to reach the task service`,
    60_000,
  );

beforeAll(async () => {
  ports = await freeStackPorts();
  service = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      handle(req, res, text ? JSON.parse(text) : {});
    });
  });
  await new Promise<void>((r) => service.listen(0, '127.0.0.1', () => r()));
  serviceUrl = `http://127.0.0.1:${(service.address() as { port: number }).port}`;
}, 30_000);

afterAll(async () => {
  if (stack && stack.child.exitCode === null && stack.child.signalCode === null) {
    try {
      process.kill(-(stack.child.pid as number), 'SIGTERM');
    } catch {
      // already gone
    }
    await Promise.race([stack.exited, new Promise((r) => setTimeout(r, 20_000))]);
  }
  for (const pid of dynamoJvms(dataDir)) killHard(pid);
  service.closeAllConnections();
  await new Promise<void>((r) => service.close(() => r()));
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe('kill -9 drill', () => {
  it('every release reaches its end after the whole stack was killed mid-poll, mid-publish and mid-cancel', async () => {
    stack = await startAndWait();
    token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const registered = await api('POST', '/task-services', {
      name: 'drill service',
      description: 'answers when the test says so',
      author: 'tests',
      url: serviceUrl,
    });
    expect(registered.status).toBe(200);
    const study = (await api('GET', '/studies?limit=1')).body.results[0].item_id;
    const create = async (name: string) => {
      const res = await api('POST', '/releases', { name, description: 'drill', studies: [study] });
      expect(res.status).toBe(200);
      return res.body.item_id as string;
    };

    // Mid-poll: running, its task keeps answering `running`.
    const polling = await create('mid-poll');
    // Mid-publish: staged, then its publish call is held open.
    const publishing = await create('mid-publish');
    finished.add(publishing);
    holdPublish.add(publishing);
    // Mid-cancel: running, then its cancel call is held open.
    const canceling = await create('mid-cancel');
    holdCancel.add(canceling);

    await waitForState(polling, 'running');
    await waitForState(publishing, 'staged');
    expect((await api('POST', `/releases/${publishing}/publish`)).status).toBe(200);
    await waitForCall('publish', publishing);
    await waitForState(canceling, 'running');
    expect((await api('DELETE', `/releases/${canceling}`)).status).toBe(200);
    await waitForCall('cancel', canceling);
    expect(await stateOf(publishing)).toBe('publishing');
    expect(await stateOf(canceling)).toBe('canceling');

    // Many tasks: the drill service registered LARGE more times, so the last release gets LARGE + 1 tasks.
    for (let i = 0; i < LARGE; i++)
      expect(
        (
          await api('POST', '/task-services', {
            name: `drill service ${i}`,
            description: 'the same service again',
            author: 'tests',
            url: serviceUrl,
          })
        ).status,
      ).toBe(200);
    const large = await create('mid-publish, many tasks');
    finished.add(large);
    holdPublish.add(large);
    await waitForState(large, 'staged', 240_000);
    expect((await api('POST', `/releases/${large}/publish`)).status).toBe(200);
    await waitForCall('publish', large);
    expect(await stateOf(large)).toBe('publishing');

    // kill -9 the whole stack: its Node process and the DynamoDB Local JVM, nothing stopped cleanly.
    const node = stackPid(dataDir);
    const jvms = dynamoJvms(dataDir);
    expect(jvms).toHaveLength(1);
    killHard(node);
    for (const pid of jvms) killHard(pid);
    await stack.exited;
    await eventually(
      async () => (isAlive(node) || jvms.some(isAlive) ? undefined : true),
      'the kill',
      10_000,
    );

    // The work the releases were waiting for ends while the stack is down.
    finished.add(polling);
    holdPublish.clear();
    holdCancel.clear();

    // npm start again, on the same DATA_DIR (and ports: the issuer is part of every token). Nothing else.
    stack = await startAndWait();
    await waitForState(polling, 'staged');
    await waitForState(publishing, 'published');
    await waitForState(canceling, 'canceled');
    const done = await waitForState(large, 'published', 240_000);
    expect(done).toBe(true);
    const largeRelease = (await api('GET', `/releases/${large}`)).body;
    expect(largeRelease.tasks).toHaveLength(LARGE + 1);
    expect(new Set(largeRelease.tasks.map((t: { state: string }) => t.state))).toEqual(
      new Set(['published']),
    );
    // Each task moved to published once: no round part was lost or written twice across the kill.
    const moves = new Map<string, number>();
    let page = (await api('GET', `/events?release=${large}&limit=100`)).body;
    for (;;) {
      for (const e of page.results)
        if (e.task && String(e.message).endsWith(' to published'))
          moves.set(e.task, (moves.get(e.task) ?? 0) + 1);
      if (!page.next) break;
      const next = new URL(page.next);
      page = (await api('GET', `${next.pathname}${next.search}`)).body;
    }
    expect(moves.size).toBe(LARGE + 1);
    expect(new Set(moves.values())).toEqual(new Set([1]));
    // The publish and cancel calls that died with the stack were sent again by the new executions.
    expect(
      received.filter((r) => r.action === 'publish' && r.releaseId === publishing).length,
    ).toBeGreaterThan(1);
    expect(received.filter((r) => r.action === 'cancel' && r.releaseId === canceling).length).toBeGreaterThan(
      1,
    );
  }, 600_000);
});
