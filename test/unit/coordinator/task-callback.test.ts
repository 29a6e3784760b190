import { describe, expect, it } from 'vitest';
import { ChangeConflictError } from '#functions/coordinator/ports.js';
import { MAX_TASKS_PER_RELEASE } from '#functions/coordinator/releases.js';
import { parseProgress, reportTask, type TaskCallbackDeps } from '#functions/coordinator/task-callback.js';
import { MAX_LIMIT } from '#functions/shared/list.js';

describe('progress', () => {
  it.each([
    [50, 50],
    ['50%', 50],
    ['7', 7],
    [' 100 % ', 100],
    [0, 0],
    [33.4, 33],
  ])('stores %j as %i', (input, expected) => {
    expect(parseProgress(input)).toBe(expected);
  });
  it.each([[-1], [101], ['half'], ['50%%'], [null], [true]])('refuses %j naming progress', (input) => {
    expect(() => parseProgress(input)).toThrow(
      expect.objectContaining({ status: 400, fields: { progress: expect.any(Array) } }),
    );
  });
});

describe('task callbacks', () => {
  type T = {
    id: string;
    releaseId: string;
    taskServiceId: string;
    serviceName: string;
    state: string;
    progress: number;
    createdAt: string;
  };
  /**
   * Two tasks of one running release behind a fake of the store's TaskReports: the id index can be made to lag
   * (`index`), writes follow the conditions the real store puts in its transaction, and `fail` makes the next write
   * throw what the store throws when conflicts or throttling outlast its retries.
   */
  function release(phase = 'running') {
    const tasks = new Map<string, T>(
      ['TA_1', 'TA_2'].map((id) => [
        id,
        {
          id,
          releaseId: 'RE_1',
          taskServiceId: `TS_${id}`,
          serviceName: 's',
          state: 'running',
          progress: 0,
          createdAt: '2026-11-26T00:00:00.000000Z',
        },
      ]),
    );
    const index = new Map<string, T>();
    const woken: string[] = [];
    const written: string[] = [];
    const calls: string[] = [];
    const state = { phase, fail: undefined as unknown, bound: false };
    const target = (t: T, confirmed: boolean) => ({ task: { ...t }, confirmed, ref: null });
    const deps = {
      releases: {
        reportTarget: async (id: string) => {
          calls.push('reportTarget');
          const t = index.get(id) ?? tasks.get(id);
          return t ? target(t, false) : null;
        },
        confirmTarget: async (t: { task: T }) => {
          calls.push('confirmTarget');
          return { ...target(tasks.get(t.task.id) as T, true), phase: state.phase };
        },
        writeReport: async (r: {
          target: { task: T };
          toState?: string;
          progress: number;
          phases: string[];
          actor: { isAdmin: boolean };
          events: { message: string }[];
        }) => {
          calls.push('writeReport');
          if (state.fail) throw state.fail;
          const now = tasks.get(r.target.task.id) as T;
          if (state.bound && !r.actor.isAdmin) return { written: false, why: 'forbidden' };
          if (now.state !== r.target.task.state)
            return { written: false, why: 'moved', target: target(now, true) };
          if (!r.phases.includes(state.phase)) return { written: false, why: 'phase', phase: state.phase };
          if (r.toState) now.state = r.toState;
          now.progress = r.progress;
          written.push(...r.events.map((e) => e.message));
          return { written: true, events: r.events };
        },
      },
      taskServices: { get: async () => null },
      orchestrator: { wake: async (id: string) => void woken.push(id) },
      publisher: { publish: async () => {} },
    } as unknown as TaskCallbackDeps;
    return { deps, woken, written, calls, tasks, index, state };
  }
  const service = { isAdmin: false, identity: 'svc' };

  it('is one read and one write per report, and never wakes the release itself (PhaseWatch does)', async () => {
    const { deps, woken, calls } = release();
    await reportTask(deps, 'TA_1', { state: 'staged' }, service);
    await reportTask(deps, 'TA_2', { state: 'staged' }, service);
    expect(woken).toEqual([]);
    expect(calls).toEqual(['reportTarget', 'writeReport', 'reportTarget', 'writeReport']);
  });

  it('judges a report again against the task as it is when the id index lagged, writing its event once', async () => {
    const { deps, written, tasks, index, calls } = release();
    index.set('TA_1', { ...(tasks.get('TA_1') as T) }); // the index still says running
    (tasks.get('TA_1') as T).state = 'staged'; // a poll round recorded staged meanwhile
    const task = await reportTask(deps, 'TA_1', { state: 'staged', progress: 100 }, service);
    expect(task).toMatchObject({ state: 'staged', progress: 100 });
    expect(written).toEqual([]); // a repeat of the state it is in: progress only, no second event
    // A transition the index's state forbids is checked against the task itself before it is refused, and allowed
    // from the state the task is really in.
    (tasks.get('TA_2') as T).state = 'staged';
    index.set('TA_2', { ...(tasks.get('TA_2') as T), state: 'pending' });
    calls.length = 0;
    const phase = await reportTask(deps, 'TA_2', { state: 'publishing' }, service).catch((e) => e);
    expect(calls.slice(0, 2)).toEqual(['reportTarget', 'confirmTarget']);
    // The task really is staged, so the report reaches the write, where the running release refuses it.
    expect(phase).toMatchObject({
      status: 409,
      message: expect.stringContaining('while its release is running'),
    });
  });

  it('refuses every report once the release is over, progress included', async () => {
    for (const phase of ['published', 'canceled', 'failed']) {
      const { deps, written } = release(phase);
      for (const report of [{ progress: 40 }, { state: 'staged' as const }])
        await expect(reportTask(deps, 'TA_1', report, service)).rejects.toMatchObject({
          status: 409,
          message: expect.stringContaining(phase),
        });
      expect(written).toEqual([]);
    }
  });

  it('answers a report of exactly what the task is with the task, writing nothing, while the release is live', async () => {
    const { deps, calls, written } = release('running');
    await expect(reportTask(deps, 'TA_1', { state: 'running', progress: 0 }, service)).resolves.toMatchObject(
      { state: 'running', progress: 0 },
    );
    // Confirmed on the task itself with its release's state (the index may lag), never written.
    expect(calls).toEqual(['reportTarget', 'confirmTarget']);
    expect(written).toEqual([]);
  });

  it('refuses a report of exactly what the task is once the release is over, as every other report', async () => {
    for (const phase of ['published', 'canceled', 'failed']) {
      const { deps, calls, written } = release(phase);
      for (const report of [
        { state: 'running' as const, progress: 0 },
        { state: 'running' as const },
        { progress: 0 },
      ])
        await expect(reportTask(deps, 'TA_1', report, service)).rejects.toMatchObject({
          status: 409,
          message: expect.stringContaining(`release that is ${phase}`),
        });
      expect(calls.filter((c) => c === 'writeReport')).toEqual([]);
      expect(written).toEqual([]);
    }
  });

  it('answers 409 or 503 with Retry-After when conflicts or throttling outlast the retries', async () => {
    const { deps, state } = release();
    state.fail = new ChangeConflictError('Too much concurrent activity; retry');
    await expect(reportTask(deps, 'TA_1', { state: 'staged' }, service)).rejects.toMatchObject({
      status: 409,
      headers: { 'Retry-After': '1' },
    });
    state.fail = Object.assign(new Error('throttled'), {
      name: 'TransactionCanceledException',
      $retryable: { throttling: true },
    });
    await expect(reportTask(deps, 'TA_1', { state: 'staged' }, service)).rejects.toMatchObject({
      status: 503,
      code: 'busy',
      headers: { 'Retry-After': '1' },
    });
    // A conflict a retry cannot resolve carries no Retry-After.
    state.fail = undefined;
    const refused = await reportTask(deps, 'TA_1', { state: 'published' }, service).catch((e) => e);
    expect(refused).toMatchObject({ status: 409 });
    expect(refused.headers).toBeUndefined();
  });

  it("refuses a report from a client the task's service is not bound to", async () => {
    const { deps, state, written } = release();
    state.bound = true;
    await expect(reportTask(deps, 'TA_1', { state: 'staged' }, service)).rejects.toMatchObject({
      status: 403,
    });
    await expect(
      reportTask(deps, 'TA_1', { state: 'staged' }, { isAdmin: true, identity: null }),
    ).resolves.toMatchObject({
      state: 'staged',
    });
    expect(written).toHaveLength(1);
  });

  it("checks the service's binding before answering a no-op or a refused transition: 403, never the task or its state", async () => {
    const { deps, calls, written } = release('running');
    const services = new Map([
      ['TS_TA_1', { id: 'TS_TA_1', clientId: null }],
      ['TS_TA_2', { id: 'TS_TA_2', clientId: 'other' }],
    ]);
    deps.taskServices = { get: async (id: string) => services.get(id) ?? null } as never;
    const ownClient = { isAdmin: false, identity: 'mine', boundClientOnly: true };
    for (const [taskId, actor] of [
      ['TA_1', ownClient],
      ['TA_2', ownClient],
      ['TA_2', service],
    ] as const)
      for (const report of [{ state: 'running' as const }, { progress: 0 }, { state: 'pending' as const }])
        await expect(reportTask(deps, taskId, report, actor)).rejects.toMatchObject({ status: 403 });
    expect(calls).not.toContain('writeReport');
    expect(written).toEqual([]);
    // A service token that is not an own client keeps the contract's rule for a service without a client.
    await expect(reportTask(deps, 'TA_1', { progress: 0 }, service)).resolves.toMatchObject({ id: 'TA_1' });
  });

  it('reads the whole release in one page: a release never has more tasks than a page holds', () => {
    expect(MAX_TASKS_PER_RELEASE).toBeLessThanOrEqual(MAX_LIMIT);
  });
});
