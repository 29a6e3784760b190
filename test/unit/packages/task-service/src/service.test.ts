import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { ErrorReply, ServiceStatus, TaskReply } from '#packages/task-service/src/contract.js';
import { fileStore } from '#packages/task-service/src/file-store.js';
import {
  createTaskService,
  type KitRequest,
  type TaskContext,
  type TaskServiceOptions,
  type TaskWork,
} from '#packages/task-service/src/service.js';

/**
 * The kit's core against the contract: every answer validates against its schema, actions follow ACTION_RULES
 * (repeats included), the work runs once and reports its end, a cancel or an ended release stops it.
 */
interface Gate {
  open(): void;
  fail(err: Error): void;
  wait: Promise<void>;
}
const gate = (): Gate => {
  let open = () => {};
  let fail: (err: Error) => void = () => {};
  const wait = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { open, fail, wait };
};

/** Work whose pieces end when the test says so. */
function controlled() {
  const calls: string[] = [];
  const gates: Record<string, Gate> = {};
  const contexts: Record<string, TaskContext> = {};
  const states: Record<string, string> = {};
  const piece = (phase: string) => async (task: TaskContext) => {
    calls.push(`${phase} ${task.taskId}`);
    contexts[`${phase} ${task.taskId}`] = task;
    gates[`${phase} ${task.taskId}`] ??= gate();
    await gates[`${phase} ${task.taskId}`].wait;
  };
  const work: TaskWork = {
    start: piece('start'),
    publish: piece('publish'),
    cancel: (task) => {
      calls.push(`cancel ${task.taskId}`);
      states[`cancel ${task.taskId}`] = task.state;
    },
  };
  const finish = (key: string) => {
    gates[key] ??= gate();
    gates[key].open();
  };
  const fail = (key: string) => {
    gates[key] ??= gate();
    gates[key].fail(new Error('disk full'));
  };
  return { work, calls, contexts, states, finish, fail };
}

/** A coordinator that records callbacks and answers with the task in the state sent (or as told). */
function coordinator(
  answer: (body: Record<string, unknown>) => Response = (b) =>
    new Response(JSON.stringify({ kf_id: 'TA_1', state: b.state ?? 'running' })),
) {
  const patches: Record<string, unknown>[] = [];
  const fetch = (async (_url: string, init: RequestInit) => {
    const body = JSON.parse(String(init.body));
    patches.push(body);
    return answer(body);
  }) as typeof globalThis.fetch;
  return { patches, fetch };
}

function kit(work: TaskWork, over: Partial<TaskServiceOptions> = {}) {
  const c = coordinator();
  const service = createTaskService(work, {
    name: 'stager',
    version: '2.0.0',
    auth: { mode: 'none' },
    coordinatorUrl: 'https://coordinator.test',
    fetch: c.fetch,
    sleep: async () => {},
    ...over,
  });
  const call = async (req: Partial<KitRequest> & { json?: unknown }) => {
    const res = await service.handle({
      method: req.method ?? 'POST',
      path: req.path ?? '/tasks',
      headers: req.headers ?? {},
      body: req.body ?? JSON.stringify(req.json),
    });
    return { ...res, json: JSON.parse(res.body) };
  };
  const act = async (action: string, task = 'TA_1', extra: Record<string, unknown> = {}) => {
    const res = await call({
      json: { action, task_id: task, release_id: 'RE_1', studies: ['SD_1'], ...extra },
    });
    if (res.status === 200) expect(TaskReply.safeParse(res.json).success).toBe(true);
    else expect(ErrorReply.safeParse(res.json).success).toBe(true);
    return res;
  };
  return { service, call, act, patches: c.patches };
}
const settle = () => new Promise((r) => setTimeout(r, 5));

describe('GET /status', () => {
  it('answers ready with name, message and version; 503 while the author’s status says not ready', async () => {
    let ready: boolean | string = true;
    const { call } = kit({ ...controlled().work, status: () => ready });
    const ok = await call({ method: 'GET', path: '/status' });
    expect(ok.status).toBe(200);
    expect(ServiceStatus.parse(ok.json)).toEqual({
      name: 'stager',
      message: 'ready for work',
      version: '2.0.0',
    });
    ready = false;
    expect((await call({ method: 'GET', path: '/status/' })).status).toBe(503);
    ready = 'reindexing';
    expect((await call({ method: 'GET', path: '/status' })).json.message).toBe('reindexing');
  });

  it('needs the coordinator’s token like every route', async () => {
    const { call } = kit(controlled().work, { auth: { mode: 'jwks', issuer: 'https://idp.test' } });
    expect((await call({ method: 'GET', path: '/status' })).status).toBe(401);
    expect((await call({ json: { action: 'initialize', task_id: 'TA_1', release_id: 'RE_1' } })).status).toBe(
      401,
    );
  });
});

describe('POST /tasks: input', () => {
  it('answers 400 to a body that is not JSON, a missing field, an unknown action; 404 to an unknown task', async () => {
    const { call, act } = kit(controlled().work);
    expect((await call({ body: '{not json' })).status).toBe(400);
    const missing = await call({ json: { action: 'start', task_id: 'TA_1' } });
    expect(missing.status).toBe(400);
    expect(missing.json.message).toMatch(/release_id/);
    const unknown = await act('explode');
    expect(unknown.status).toBe(400);
    expect(unknown.json.message).toMatch(/unknown action "explode"/);
    for (const action of ['start', 'get_status', 'publish', 'cancel'])
      expect((await act(action, 'TA_NONE')).status).toBe(404);
  });

  it('answers 404 to another path and 405 to another method', async () => {
    const { call } = kit(controlled().work);
    expect((await call({ path: '/other' })).status).toBe(404);
    const wrong = await call({ method: 'GET', path: '/tasks' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.Allow).toBe('POST');
  });

  it('refuses an action for a task of another release', async () => {
    const { act } = kit(controlled().work);
    await act('initialize');
    expect((await act('get_status', 'TA_1', { release_id: 'RE_2' })).status).toBe(400);
  });
});

describe('POST /tasks: a task’s life', () => {
  it('initialize, start, progress, staged, publish, published: each repeat answers the same, the work runs once', async () => {
    const w = controlled();
    const { act, patches, service } = kit(w.work);
    const first = await act('initialize');
    expect(first.json).toMatchObject({
      name: 'stager',
      kf_id: 'TA_1',
      task_id: 'TA_1',
      release_id: 'RE_1',
      state: 'pending',
      progress: 0,
    });
    expect((await act('initialize')).json).toEqual(first.json);
    expect((await act('publish')).status).toBe(503);
    expect((await act('start')).json.state).toBe('running');
    expect((await act('start')).json.state).toBe('running');
    await settle();
    expect(w.calls).toEqual(['start TA_1']);
    expect(w.contexts['start TA_1'].studies).toEqual(['SD_1']);
    await w.contexts['start TA_1'].progress(40);
    expect((await act('get_status')).json).toMatchObject({ state: 'running', progress: 40 });
    w.finish('start TA_1');
    await service.idle();
    expect(patches).toEqual([{ progress: 40 }, { state: 'staged', progress: 100 }]);
    expect((await act('start')).json.state).toBe('staged');
    expect((await act('publish')).json).toMatchObject({ state: 'publishing', progress: 0 });
    expect((await act('publish')).json.state).toBe('publishing');
    w.finish('publish TA_1');
    await service.idle();
    // A publish again (the coordinator restarted) is accepted and answers the task as it is.
    expect((await act('publish')).json).toMatchObject({ state: 'published', progress: 100 });
    // A cancel of a published task answers published, and reaches cancel() once, with the state it was in.
    expect((await act('cancel')).json.state).toBe('published');
    expect((await act('cancel')).json.state).toBe('published');
    await service.idle();
    expect((await act('start')).status).toBe(503);
    expect(w.calls).toEqual(['start TA_1', 'publish TA_1', 'cancel TA_1']);
    expect(w.states['cancel TA_1']).toBe('published');
  });

  it('cancel stops the work: its signal aborts, cancel is called once, the end is never reported', async () => {
    const w = controlled();
    const { act, patches, service } = kit(w.work);
    await act('initialize');
    await act('start');
    await settle();
    expect((await act('cancel')).json.state).toBe('canceled');
    expect(w.contexts['start TA_1'].signal.aborted).toBe(true);
    await expect(w.contexts['start TA_1'].progress(50)).rejects.toThrow(/ended/);
    expect((await act('cancel')).json.state).toBe('canceled');
    w.finish('start TA_1');
    await service.idle();
    expect((await act('get_status')).json.state).toBe('canceled');
    expect((await act('start')).status).toBe(503);
    expect(w.calls).toEqual(['start TA_1', 'cancel TA_1']);
    expect(patches).toEqual([]);
  });

  it('a work that throws makes the task failed, reported once', async () => {
    const w = controlled();
    const { act, patches, service } = kit(w.work);
    await act('initialize');
    await act('start');
    await settle();
    w.fail('start TA_1');
    await service.idle();
    expect((await act('get_status')).json.state).toBe('failed');
    expect(patches).toEqual([{ state: 'failed' }]);
  });

  it('stops the work when a callback says the release has ended', async () => {
    const w = controlled();
    const ended = coordinator(
      () =>
        new Response(
          JSON.stringify({
            error: { code: 'conflict', message: 'allowed states now: none (the release is over)' },
          }),
          { status: 409 },
        ),
    );
    const { act, service } = kit(w.work, { fetch: ended.fetch });
    await act('initialize');
    await act('start');
    await settle();
    await expect(w.contexts['start TA_1'].progress(20)).rejects.toThrow(/ended/);
    expect(w.contexts['start TA_1'].signal.aborted).toBe(true);
    expect((await act('get_status')).json.state).toBe('canceled');
    w.finish('start TA_1');
    await service.idle();
    expect((await act('get_status')).json.state).toBe('canceled');
  });

  it('refuses an action the author’s beforeAction refuses (503), and an initialize its initialize refuses', async () => {
    const { act } = kit({
      ...controlled().work,
      beforeAction: (action) => {
        if (action === 'get_status') throw new Error('maintenance');
      },
      initialize: (task) => {
        if (task.taskId === 'TA_BAD') throw new Error('no such study');
      },
    });
    await act('initialize');
    const refused = await act('get_status');
    expect(refused.status).toBe(503);
    expect(refused.json.message).toMatch(/maintenance/);
    expect((await act('initialize', 'TA_BAD')).json.message).toMatch(/no such study/);
    expect((await act('get_status', 'TA_BAD')).status).toBe(503);
  });

  it('answers 503 with Retry-After when its store fails, so the coordinator retries', async () => {
    const failing = { get: async () => Promise.reject(new Error('store down')) } as never;
    const res = await kit(controlled().work, { store: failing, log: () => {} }).act('get_status');
    expect(res.status).toBe(503);
    expect(res.headers['Retry-After']).toBe('1');
  });

  it('runs the work before answering in inline mode (Lambda)', async () => {
    const { act } = kit({ start: async (t) => t.progress(50), publish: async () => {} }, { run: 'inline' });
    await act('initialize');
    expect((await act('start')).json).toMatchObject({ state: 'staged', progress: 100 });
    expect((await act('publish')).json).toMatchObject({ state: 'published', progress: 100 });
  });

  it('logs each action with the coordinator’s correlation id and sends it back on the callbacks', async () => {
    const lines: string[] = [];
    const headers: Record<string, unknown>[] = [];
    const fetch = (async (_u: string, init: RequestInit) => {
      headers.push(init.headers as Record<string, unknown>);
      return new Response(JSON.stringify({ state: 'staged' }));
    }) as typeof globalThis.fetch;
    const { call, service } = kit(
      { start: async () => void (await settle()), publish: async () => {} },
      { log: (l) => lines.push(l), fetch },
    );
    for (const action of ['initialize', 'start'])
      await call({
        json: { action, task_id: 'TA_1', release_id: 'RE_1' },
        headers: { 'x-request-id': 'corr-1' },
      });
    await service.idle();
    expect(lines.filter((l) => !l.startsWith('PATCH'))).toEqual([
      'initialize TA_1 -> pending [corr-1]',
      'start TA_1 -> running [corr-1]',
    ]);
    expect(headers[0]).toMatchObject({ 'X-Request-Id': 'corr-1' });
  });
});

describe('a restart', () => {
  it('finds its tasks in the file store, and resume() starts the work of a running task again', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kit-restart-')), 'tasks.json');
    const before = controlled();
    const first = kit(before.work, { store: fileStore(file) });
    await first.act('initialize');
    await first.act('start');
    await settle();
    // The process ends mid-work (its work never learns of it: this one ignores its signal).
    first.service.stop();
    const after = controlled();
    const second = kit(after.work, { store: fileStore(file) });
    // get_status only reads the store: it never starts work.
    expect((await second.act('get_status')).json.state).toBe('running');
    await settle();
    expect(after.calls).toEqual([]);
    expect(await second.service.resume()).toBe(1);
    await settle();
    expect(after.calls).toEqual(['start TA_1']);
    expect(after.contexts['start TA_1']).toMatchObject({ attempt: 2, resumed: true });
    after.finish('start TA_1');
    await second.service.idle();
    expect((await second.act('get_status')).json.state).toBe('staged');
  });
});

describe('signatures', () => {
  const secret = `whsec_${Buffer.from('k'.repeat(32)).toString('base64')}`;
  it('refuses an unsigned action and a replay, accepts a signed one; GET /status needs none', async () => {
    const { service } = kit(controlled().work, { signingSecrets: () => [secret] });
    const body = JSON.stringify({ action: 'initialize', task_id: 'TA_1', release_id: 'RE_1' });
    const at = new Date();
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign('msg_1', at, body),
    };
    const post = (h: Record<string, string>) =>
      service.handle({ method: 'POST', path: '/tasks', headers: h, body });
    expect((await post({})).status).toBe(401);
    expect((await post(headers)).status).toBe(200);
    expect((await post(headers)).status).toBe(401);
    expect((await service.handle({ method: 'GET', path: '/status', headers: {}, body: '' })).status).toBe(
      200,
    );
  });
});
