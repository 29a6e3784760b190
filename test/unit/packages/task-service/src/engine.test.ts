import { describe, expect, it } from 'vitest';
import type { TaskContext } from '#packages/task-service/src/context.js';
import { localQueue, type WorkJob } from '#packages/task-service/src/queue.js';
import {
  createTaskService,
  type TaskServiceOptions,
  type TaskWork,
} from '#packages/task-service/src/service.js';
import { memoryStore } from '#packages/task-service/src/store.js';

/**
 * The kit's work engine through the service: work handed off (the kit answers running and reports the end from
 * wherever the work runs), the worker mode's jobs, re-runs after a restart with attempt, resumed and checkpoint,
 * a run stopped before its time is up, clean-ups that never hold up the cancel's answer, cancels of published
 * tasks, and the sweep of the tasks the coordinator gave up on.
 *
 * @covers packages/task-service/src/engine.ts
 */
interface Patch {
  url: string;
  method: string;
  body?: Record<string, unknown>;
}

/** A coordinator that records callbacks and answers GET /tasks/<id> with what `states` says. */
function coordinator(states: Record<string, string | number> = {}) {
  const calls: Patch[] = [];
  const fetch = (async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? 'GET';
    const body = init.body ? JSON.parse(String(init.body)) : undefined;
    calls.push({ url, method, body });
    const id = url.split('/').pop() ?? '';
    if (method === 'GET') {
      const there = states[id];
      if (typeof there === 'number') return new Response('{}', { status: there });
      return new Response(JSON.stringify({ kf_id: id, state: there ?? 'running' }));
    }
    return new Response(JSON.stringify({ kf_id: id, state: body.state ?? 'running' }));
  }) as typeof globalThis.fetch;
  return { calls, fetch, patches: () => calls.filter((c) => c.method === 'PATCH').map((c) => c.body) };
}

function service(work: TaskWork, over: Partial<TaskServiceOptions> = {}, states = {}) {
  const c = coordinator(states);
  const store = memoryStore();
  const svc = createTaskService(work, {
    name: 'stager',
    auth: { mode: 'none' },
    coordinatorUrl: 'https://coordinator.test',
    fetch: c.fetch,
    sleep: async () => {},
    store,
    ...over,
  });
  const act = async (action: string, task = 'TA_1') => {
    const res = await svc.handle({
      method: 'POST',
      path: '/tasks',
      headers: {},
      body: JSON.stringify({ action, task_id: task, release_id: 'RE_1', studies: ['SD_1'] }),
    });
    return { status: res.status, ...JSON.parse(res.body) };
  };
  return { svc, act, store, ...c };
}

/** A promise the test settles. */
function later<T = void>() {
  let resolve: (v: T) => void = () => {};
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('work handed to an outside job', () => {
  it('answers running, keeps the task running, and reportTask records and reports its progress and end', async () => {
    const jobs: string[] = [];
    const s = service({
      start: (task) => {
        jobs.push(task.taskId);
        return task.handOff();
      },
      publish: async () => {},
    });
    await s.act('initialize');
    expect((await s.act('start')).state).toBe('running');
    await s.svc.idle();
    expect(jobs).toEqual(['TA_1']);
    expect(s.store.tasks.get('TA_1')).toMatchObject({ state: 'running', handed_off: true });
    // A restart runs nothing again: the outside job owns the work.
    expect(await s.svc.resume()).toBe(0);
    expect(await s.svc.reportTask('TA_1', { progress: 40, checkpoint: { files: 3 } })).toBe('recorded');
    expect((await s.act('get_status')).progress).toBe(40);
    expect(s.store.tasks.get('TA_1')?.checkpoint).toEqual({ files: 3 });
    await expect(s.svc.reportTask('TA_1', { state: 'published' })).rejects.toThrow(/staged or failed/);
    expect(await s.svc.reportTask('TA_1', { state: 'staged' })).toBe('recorded');
    expect((await s.act('get_status')).state).toBe('staged');
    expect(s.patches()).toEqual([{ progress: 40 }, { state: 'staged', progress: 100 }]);
    // A report after the end: repeated, it is recorded; anything else says the work has ended.
    expect(await s.svc.reportTask('TA_1', { state: 'staged' })).toBe('recorded');
    expect(await s.svc.reportTask('TA_1', { progress: 50 })).toBe('ended');
  });

  it('answers ended to a report on a canceled task, and marks it for clean-up when the report finds it ended', async () => {
    const s = service({ start: (t) => t.handOff(), publish: async () => {} });
    await s.act('initialize');
    await s.act('start');
    await s.act('cancel');
    expect(await s.svc.reportTask('TA_1', { progress: 10 })).toBe('ended');
    await expect(s.svc.reportTask('TA_NONE', { progress: 10 })).rejects.toThrow(/not found/);
  });
});

describe('the worker mode', () => {
  it('sends start and publish as jobs, answers at once, and the jobs run the work to its end', async () => {
    const sent: WorkJob[] = [];
    const queue = localQueue({ retrySeconds: 0.01 });
    const spy = {
      ...queue,
      send: async (job: WorkJob) => {
        sent.push(job);
        await queue.send(job);
      },
    };
    const s = service(
      { start: async (t) => t.progress(50), publish: async () => {} },
      { run: 'worker', queue: spy },
    );
    await s.act('initialize');
    expect((await s.act('start')).state).toBe('running');
    await s.svc.idle();
    expect((await s.act('get_status')).state).toBe('staged');
    expect((await s.act('publish')).state).toBe('publishing');
    await s.svc.idle();
    expect((await s.act('get_status')).state).toBe('published');
    expect(sent).toEqual([
      { task_id: 'TA_1', phase: 'start' },
      { task_id: 'TA_1', phase: 'publish' },
    ]);
    expect(s.patches()).toEqual([
      { progress: 50 },
      { state: 'staged', progress: 100 },
      { state: 'published', progress: 100 },
    ]);
  });

  it('answers 503 with Retry-After, the task unmoved, when the queue cannot take the job', async () => {
    const s = service(
      { start: async () => {}, publish: async () => {} },
      { run: 'worker', queue: { send: async () => Promise.reject(new Error('queue down')) }, log: () => {} },
    );
    await s.act('initialize');
    const res = await s.act('start');
    expect(res.status).toBe(503);
    expect(s.store.tasks.get('TA_1')?.state).toBe('pending');
  });

  it('a job run again after a crash resumes: attempt 2, resumed, the last checkpoint; a job for a task that moved does nothing', async () => {
    const seen: Pick<TaskContext, 'attempt' | 'resumed' | 'checkpoint'>[] = [];
    const saved = later();
    const work: TaskWork = {
      start: async (t) => {
        seen.push({ attempt: t.attempt, resumed: t.resumed, checkpoint: t.checkpoint });
        if (t.attempt > 1) return;
        await t.saveCheckpoint({ done: ['SD_1'] });
        saved.resolve();
        // The worker dies here: its run never ends, and nothing more is written.
        await new Promise(() => {});
      },
      publish: async () => {},
    };
    const first = service(work, { run: 'worker', queue: { send: async () => {} } });
    await first.act('initialize');
    await first.act('start');
    void first.svc.runJob({ task_id: 'TA_1', phase: 'start' });
    await saved.promise;
    // The message is delivered again, to another worker, over the same task store.
    const again = createTaskService(work, {
      name: 'stager',
      auth: { mode: 'none' },
      store: first.store,
      run: 'worker',
      queue: { send: async () => {} },
    });
    expect(await again.runJob({ task_id: 'TA_1', phase: 'start' })).toBe('done');
    expect(seen).toEqual([
      { attempt: 1, resumed: false, checkpoint: undefined },
      { attempt: 2, resumed: true, checkpoint: { done: ['SD_1'] } },
    ]);
    expect(first.store.tasks.get('TA_1')).toMatchObject({ state: 'staged', checkpoint: null });
    expect(await again.runJob({ task_id: 'TA_1', phase: 'start' })).toBe('done');
    expect(seen).toHaveLength(2);
    first.svc.stop();
  });

  it('stops work that would outlast its run: paused, the task still running, and the next run resumes', async () => {
    const s = service(
      {
        start: (t) =>
          new Promise<void>((resolve, reject) => {
            if (t.attempt > 1) return resolve();
            t.signal.addEventListener('abort', () => reject(t.signal.reason));
          }),
        publish: async () => {},
      },
      { run: 'worker', queue: { send: async () => {} } },
    );
    await s.act('initialize');
    await s.act('start');
    expect(await s.svc.runJob({ task_id: 'TA_1', phase: 'start' }, { stopAt: Date.now() + 30 })).toBe(
      'paused',
    );
    expect(s.store.tasks.get('TA_1')).toMatchObject({ state: 'running', attempt: 1 });
    expect(await s.svc.runJob({ task_id: 'TA_1', phase: 'start' })).toBe('done');
    expect(s.store.tasks.get('TA_1')?.state).toBe('staged');
  });

  it('stops work that another instance canceled, by re-reading its task', async () => {
    const aborted = later<unknown>();
    const s = service(
      {
        start: (t) =>
          new Promise<void>((_, reject) =>
            t.signal.addEventListener('abort', () => {
              aborted.resolve(t.signal.reason);
              reject(t.signal.reason);
            }),
          ),
        publish: async () => {},
      },
      { run: 'worker', queue: { send: async () => {} }, watchSeconds: 0.02 },
    );
    await s.act('initialize');
    await s.act('start');
    const run = s.svc.runJob({ task_id: 'TA_1', phase: 'start' });
    await new Promise((r) => setTimeout(r, 10));
    s.store.tasks.get('TA_1')!.state = 'canceled';
    expect(String(await aborted.promise)).toMatch(/ended/);
    expect(await run).toBe('done');
    expect(s.patches()).toEqual([]);
  });
});

describe('cancel', () => {
  it('answers canceled without waiting for the clean-up, which then runs once with the state it was canceled in', async () => {
    const cleanup = later();
    const states: string[] = [];
    const s = service({
      start: (t) => t.handOff(),
      publish: async () => {},
      cancel: async (t) => {
        states.push(t.state);
        await cleanup.promise;
      },
    });
    await s.act('initialize');
    await s.act('start');
    const answer = await Promise.race([
      s.act('cancel'),
      new Promise((r) => setTimeout(() => r('waited for the clean-up'), 500)),
    ]);
    expect(answer).toMatchObject({ state: 'canceled' });
    expect(s.store.tasks.get('TA_1')).toMatchObject({ cleanup: 'pending', cancel_from: 'running' });
    cleanup.resolve();
    await s.svc.idle();
    expect(states).toEqual(['running']);
    expect(s.store.tasks.get('TA_1')?.cleanup).toBe('done');
    await s.act('cancel');
    await s.svc.idle();
    expect(states).toEqual(['running']);
  });

  it('after a restart, runs the clean-ups a stop left pending', async () => {
    const states: string[] = [];
    const s = service({
      start: async () => {},
      publish: async () => {},
      cancel: (t) => void states.push(t.state),
    });
    s.store.tasks.set('TA_9', {
      task_id: 'TA_9',
      release_id: 'RE_1',
      studies: [],
      state: 'canceled',
      progress: 0,
      date_submitted: new Date().toISOString(),
      cancel_from: 'staged',
      cleanup: 'pending',
    });
    expect(await s.svc.resume()).toBe(0);
    await s.svc.idle();
    expect(states).toEqual(['staged']);
  });
});

describe('the sweep: tasks the coordinator gave up on', () => {
  it('cancels and cleans up the tasks the coordinator failed, canceled or no longer knows, and leaves the others', async () => {
    const cleaned: string[] = [];
    const s = service(
      {
        start: (t) => t.handOff(),
        publish: async () => {},
        cancel: (t) => void cleaned.push(`${t.taskId} ${t.state}`),
      },
      {},
      { TA_1: 'canceled', TA_2: 'failed', TA_3: 404, TA_4: 'running', TA_5: 503 },
    );
    for (const id of ['TA_1', 'TA_2', 'TA_3', 'TA_4', 'TA_5']) {
      await s.act('initialize', id);
      await s.act('start', id);
    }
    await s.svc.reportTask('TA_2', { state: 'staged' });
    expect(await s.svc.sweep()).toEqual({ asked: 5, canceled: 3 });
    await s.svc.idle();
    expect(cleaned.sort()).toEqual(['TA_1 running', 'TA_2 staged', 'TA_3 running']);
    for (const [id, state] of Object.entries({ TA_1: 'canceled', TA_4: 'running', TA_5: 'running' }))
      expect((await s.act('get_status', id)).state, id).toBe(state);
    const asked = s.calls.filter((c) => c.method === 'GET').map((c) => c.url);
    expect(asked).toContain('https://coordinator.test/tasks/TA_4');
  });

  it('asks nothing without a coordinator', async () => {
    const s = service({ start: async () => {}, publish: async () => {} }, { coordinatorUrl: undefined });
    expect(await s.svc.sweep()).toEqual({ asked: 0, canceled: 0 });
  });
});
