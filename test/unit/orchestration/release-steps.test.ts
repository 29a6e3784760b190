import { describe, expect, it } from 'vitest';
import { MAX_EXECUTION_AGE_SECONDS } from '#functions/orchestration/config.js';
import { routeOf } from '#functions/orchestration/release-steps.js';
import { reply, STEPS_RELEASE, stepsSetup } from './fakes.js';

const REL = STEPS_RELEASE;
const setup = stepsSetup;

describe('routing by the stored release state', () => {
  const agg = (state: string, tasks: string[] = []) =>
    ({ release: { state }, tasks: tasks.map((s) => ({ state: s })), notes: [], extras: {} }) as any;
  it.each([
    ['initializing', ['pending', 'pending'], 'initialize'],
    ['initializing', ['running', 'pending'], 'start'],
    ['running', ['running'], 'poll'],
    ['staged', ['staged'], 'waitPublish'],
    ['publishing', ['staged', 'publishing'], 'publish'],
    ['publishing', ['publishing'], 'poll'],
    ['publishing', [], 'publish'],
    ['canceling', ['running'], 'cancel'],
    ['published', [], 'done'],
    ['canceled', [], 'done'],
    ['failed', [], 'done'],
  ])('routes a release in %s with tasks %j to %s', (state, tasks, next) => {
    expect(routeOf(agg(state, tasks))).toBe(next);
  });
  it('ends an execution whose release no longer exists', () => {
    expect(routeOf(null)).toBe('done');
  });
});

describe('signing', () => {
  it('signs every action for its own service with that service’s secrets, the replaced one only during its grace', async () => {
    const { calls, deps, run } = setup(() => reply('pending'));
    const now = deps.clock.nowMs();
    deps.credentials.set('TS_00000000', {
      signingSecret: 'whsec_a',
      previousSigningSecret: 'whsec_a_old',
      previousUntil: new Date(now + 60_000).toISOString(),
      createdClientId: null,
      rotatedAt: null,
    });
    deps.credentials.set('TS_00000001', {
      signingSecret: 'whsec_b',
      previousSigningSecret: 'whsec_b_old',
      previousUntil: new Date(now - 1).toISOString(),
      createdClientId: null,
      rotatedAt: null,
    });
    await run('initialize');
    const byUrl = Object.fromEntries(calls.signed.map((c) => [c.url, c.secrets]));
    expect(byUrl).toEqual({ 'http://svc0': ['whsec_a', 'whsec_a_old'], 'http://svc1': ['whsec_b'] });
  });

  it('sends unsigned actions to a service that has no secret (registered before secrets existed)', async () => {
    const { calls, run } = setup(() => reply('pending'), 1);
    await run('initialize');
    expect(calls.signed[0].secrets).toEqual([]);
  });
});

describe('release steps', () => {
  it('route clears a pending wake before reading, and counts one step', async () => {
    const { releases, run } = setup(() => reply('pending'));
    await releases.exchangeExtras(REL, { set: { wakePending: true } });
    const out = await run('route');
    expect(out).toEqual({ next: 'initialize', state: 'initializing', rounds: 1 });
    expect((await releases.load(REL))?.extras).toMatchObject({ wakePending: false });
  });

  it('an execution of an older generation than the release records ends at its next route or poll', async () => {
    const { releases, calls, run } = setup(() => reply('running'), 1, { state: 'running' }, [
      { state: 'running' },
    ]);
    await releases.exchangeExtras(REL, { set: { generation: 3 } });
    expect(await run('route', { generation: 2 })).toMatchObject({ next: 'done' });
    expect(await run('poll', { generation: 2 })).toMatchObject({ next: 'done' });
    expect(calls.calls).toEqual([]);
    expect(await run('poll', { generation: 3 })).toMatchObject({ next: 'wait' });
  });

  it('initialize accepts pending and the legacy "initialized" and moves on to start without writing', async () => {
    const { releases, calls, run } = setup((url) => reply(url.endsWith('0') ? 'pending' : 'initialized'));
    expect(await run('initialize')).toMatchObject({ next: 'start', state: 'initializing' });
    expect(calls.calls.map((c) => c.action)).toEqual(['initialize', 'initialize']);
    expect(releases.changes).toEqual([]);
  });

  it('initialize takes a release without tasks straight to staged', async () => {
    const { releases, deps, run } = setup(() => reply('pending'), 0);
    expect(await run('initialize')).toMatchObject({ next: 'waitPublish', state: 'staged' });
    expect(releases.state(REL)).toBe('staged');
    expect(deps.published.map((e) => e.message)).toEqual([
      `release ${REL}, version 0.0.1 changed from initializing to staged`,
    ]);
  });

  it('a non-200 at initialize fails that task and moves the release to canceling, naming service, action and reason', async () => {
    const { releases, deps, run } = setup((url) =>
      url.endsWith('1') ? { ok: false, kind: 'status', reason: 'answered status 500' } : reply('pending'),
    );
    expect(await run('initialize')).toMatchObject({ next: 'cancel', state: 'canceling' });
    expect(releases.tasks(REL)).toEqual(['pending', 'failed']);
    const error = deps.published.find((e) => e.eventType === 'error');
    expect(error).toMatchObject({ taskId: 'TA_00000001', taskServiceId: 'TS_00000001', releaseId: REL });
    expect(error?.message).toBe(
      'task TA_00000001 changed from pending to failed: initialize to task service "svc1" (TS_00000001) failed: answered status 500',
    );
  });

  it('a timeout is reported with the action timeout in seconds', async () => {
    const { deps, run } = setup(() => ({ ok: false, kind: 'timeout', reason: 'timed out' }), 1);
    await run('initialize');
    expect(deps.published.find((e) => e.eventType === 'error')?.message).toMatch(
      /failed: no reply within 0.5 s$/,
    );
  });

  it('start moves tasks and release to running and waits; an instant service may already be staged', async () => {
    const { releases, run } = setup((url) =>
      reply(url.endsWith('0') ? 'running' : 'staged', { progress: '10%' }),
    );
    expect(await run('start')).toMatchObject({ next: 'wait', state: 'running' });
    expect(releases.state(REL)).toBe('running');
    const tasks = (await releases.load(REL))?.tasks ?? [];
    expect(tasks.map((t) => [t.state, t.progress])).toEqual([
      ['running', 10],
      ['staged', 10],
    ]);
  });

  it('start goes straight to a poll when every task is already staged', async () => {
    const { run } = setup(() => reply('staged'));
    expect(await run('start')).toMatchObject({ next: 'poll', state: 'running' });
  });

  it('a state that is not a valid next state fails the task', async () => {
    const { releases, deps, run } = setup((url) => reply(url.endsWith('0') ? 'running' : 'published'));
    expect(await run('start')).toMatchObject({ next: 'cancel' });
    expect(releases.tasks(REL)).toEqual(['pending', 'failed']);
    expect(deps.published.find((e) => e.eventType === 'error')?.message).toContain(
      'reported state published, which is not a valid next state after start',
    );
  });

  it('poll stages the release when every task reports staged, with the events of every change', async () => {
    const { releases, deps, calls, run } = setup(() => reply('staged'), 2, { state: 'running' }, [
      { state: 'running' },
      { state: 'running' },
    ]);
    expect(await run('poll', { rounds: 2 })).toEqual({ next: 'waitPublish', state: 'staged', rounds: 3 });
    expect(calls.calls.map((c) => c.action)).toEqual(['get_status', 'get_status']);
    expect(releases.state(REL)).toBe('staged');
    expect(deps.published.map((e) => e.message)).toEqual([
      'task TA_00000000 changed from running to staged',
      'task TA_00000001 changed from running to staged',
      `release ${REL}, version 0.0.1 changed from running to staged`,
    ]);
  });

  it('poll asks only the tasks still working and keeps waiting; after maxRounds it continues as a new execution', async () => {
    const { calls, run } = setup(() => reply('running', { progress: 50 }), 2, { state: 'running' }, [
      { state: 'staged' },
      { state: 'running' },
    ]);
    expect(await run('poll', { rounds: 0 })).toMatchObject({ next: 'wait', rounds: 1 });
    expect(calls.calls.map((c) => c.taskId)).toEqual(['TA_00000001']);
    expect(await run('poll', { rounds: 4 })).toMatchObject({ next: 'continue', rounds: 5 });
  });

  it('every loop hands over at maxRounds: the staged wait too, and any step but start and done', async () => {
    const staged = setup(() => reply('staged'), 1, { state: 'staged' }, [{ state: 'staged' }]);
    expect(await staged.run('route', { rounds: 3 })).toMatchObject({ next: 'waitPublish', rounds: 4 });
    expect(await staged.run('route', { rounds: 4 })).toMatchObject({ next: 'continue', rounds: 5 });
    const canceling = setup(() => reply('canceled'), 1, { state: 'canceling' }, [{ state: 'running' }]);
    expect(await canceling.run('route', { rounds: 9 })).toMatchObject({ next: 'continue', rounds: 10 });
    // start cannot be re-derived by a fresh execution (it would initialize again): it goes first.
    const init = setup(() => reply('pending'), 1, {}, [{ state: 'pending' }]);
    expect(await init.run('initialize', { rounds: 4 })).toMatchObject({ next: 'start', rounds: 5 });
    const done = setup(() => reply('canceled'), 1, { state: 'canceling' }, [{ state: 'running' }]);
    expect(await done.run('cancel', { rounds: 7 })).toMatchObject({ next: 'done', state: 'canceled' });
  });

  it('an execution that has run for MAX_EXECUTION_AGE_SECONDS hands over at its next step', async () => {
    const { deps, run } = setup(() => reply('staged'), 1, { state: 'staged' }, [{ state: 'staged' }]);
    const started = new Date(deps.clock.nowMs() - MAX_EXECUTION_AGE_SECONDS * 1000).toISOString();
    expect(await run('route', { startedAt: started })).toMatchObject({ next: 'continue', rounds: 1 });
    const recent = new Date(deps.clock.nowMs() - 1000).toISOString();
    expect(await run('route', { startedAt: recent })).toMatchObject({ next: 'waitPublish' });
  });

  /** A callback that lands between the round's read and its first write: task 0 becomes staged, once. */
  const stageTaskZeroBeforeFirstWrite = (releases: ReturnType<typeof setup>['releases']) => {
    let once = true;
    releases.beforeChange = () => {
      if (!once) return;
      once = false;
      const t = releases.releases.get(REL)?.tasks[0];
      if (t) t.state = 'staged';
    };
  };

  it('never moves a task back when a callback moved it on while the round was asking', async () => {
    const { releases, run } = setup(() => reply('running', { progress: 30 }), 2, { state: 'running' }, [
      { state: 'running' },
      { state: 'running' },
    ]);
    // The first write attempt of the round finds task 0 staged by a PATCH that landed meanwhile.
    stageTaskZeroBeforeFirstWrite(releases);
    await run('poll');
    expect(releases.tasks(REL)).toEqual(['staged', 'running']);
    const tasks = (await releases.load(REL))?.tasks ?? [];
    expect(tasks.map((t) => t.progress)).toEqual([0, 30]); // the stale report's progress is not put on the staged task
  });

  it('does not fail a task for a failed get_status when a callback moved it on meanwhile', async () => {
    const { releases, run } = setup(
      (url) =>
        url.endsWith('0') ? { ok: false, kind: 'status', reason: 'answered status 404' } : reply('running'),
      2,
      { state: 'running' },
      [{ state: 'running' }, { state: 'running' }],
    );
    // Task 0's service already called back (staged) and forgot the task, so its get_status answers 404: the
    // failure is about a state the task has left, and must not fail the staged task or the release.
    stageTaskZeroBeforeFirstWrite(releases);
    await run('poll');
    expect(releases.tasks(REL)).toEqual(['staged', 'running']);
    expect((await releases.load(REL))?.release.state).toBe('running');
  });

  it('publishes with the next minor version, claims it, and stamps every study', async () => {
    const { releases, deps, run } = setup(
      () => reply('published'),
      1,
      {
        state: 'publishing',
        studies: ['SD_00000001', 'SD_00000002'],
      },
      [{ state: 'publishing' }],
    );
    releases.versions.set('0.3.0', 'RE_OLD');
    expect(await run('poll')).toMatchObject({ next: 'done', state: 'published' });
    const r = await releases.load(REL);
    expect(r?.release.version).toBe('0.4.0');
    expect(releases.versions.get('0.4.0')).toBe(REL);
    expect(releases.studies.get('SD_00000002')).toEqual({
      studyId: 'SD_00000002',
      lastPubVersion: '0.4.0',
      lastPubDate: '2026-06-01T00:00:00.000000Z',
    });
    expect(deps.published.at(-1)?.message).toBe(
      `release ${REL}, version 0.4.0 changed from publishing to published`,
    );
  });

  it('takes the next major for a major release, and the next free version when another publish took it first', async () => {
    const { releases, run } = setup(() => reply('published'), 1, { state: 'publishing', isMajor: true }, [
      { state: 'publishing' },
    ]);
    releases.versions.set('1.2.0', 'RE_OLD');
    let raced = false;
    releases.beforeChange = (c) => {
      if (c.claimVersion && !raced) {
        raced = true;
        releases.versions.set(c.claimVersion, 'RE_OTHER'); // a concurrent publish claimed 2.0.0
      }
    };
    await run('poll');
    expect((await releases.load(REL))?.release.version).toBe('3.0.0');
  });

  it('publish sends publish only to staged tasks and settles their replies', async () => {
    const { releases, calls, run } = setup(() => reply('publishing'), 2, { state: 'publishing' }, [
      { state: 'staged' },
      { state: 'publishing' },
    ]);
    expect(await run('publish')).toMatchObject({ next: 'wait', state: 'publishing' });
    expect(calls.calls).toEqual([{ url: 'http://svc0', action: 'publish', taskId: 'TA_00000000' }]);
    expect(releases.tasks(REL)).toEqual(['publishing', 'publishing']);
  });

  it('splits a change over many tasks into transactions of at most 100 items, the release moving last', async () => {
    const n = 60;
    const { releases, run } = setup(
      () => reply('staged'),
      n,
      { state: 'running' },
      Array.from({ length: n }, () => ({ state: 'running' })),
    );
    expect(await run('poll')).toMatchObject({ next: 'waitPublish', state: 'staged' });
    expect(releases.changes.length).toBeGreaterThan(1);
    expect(
      releases.changes.slice(0, -1).every((c) => c.toState === undefined && c.expectState === 'running'),
    ).toBe(true);
    expect(releases.changes.at(-1)?.toState).toBe('staged');
    expect(releases.tasks(REL).every((s) => s === 'staged')).toBe(true);
  });

  it('cancel sends cancel to every task, the failed one included, and ends the release failed when a task failed', async () => {
    const { releases, calls, deps, run } = setup(
      (url) =>
        url.endsWith('2')
          ? { ok: false, kind: 'status', status: 500, reason: 'answered status 500' }
          : reply('canceled'),
      3,
      { state: 'canceling' },
      [{ state: 'failed' }, { state: 'running' }, { state: 'staged' }],
    );
    expect(await run('cancel')).toMatchObject({ next: 'done', state: 'failed' });
    // The spec: "the coordinator sends cancel to all task services". The failed task's service is told to stop too.
    expect(calls.calls.map((c) => c.taskId)).toEqual(['TA_00000000', 'TA_00000001', 'TA_00000002']);
    expect(releases.tasks(REL)).toEqual(['failed', 'canceled', 'canceled']);
    expect(deps.published.find((e) => e.eventType === 'warning')?.message).toBe(
      'task TA_00000002: cancel to task service "svc2" (TS_00000002) failed: answered status 500; the task is canceled anyway',
    );
    const end = deps.published.find(
      (e) => e.message === `release ${REL}, version 0.0.1 changed from canceling to failed`,
    );
    expect(end?.eventType).toBe('error');
  });

  it('cancel ends the release canceled when nothing failed', async () => {
    const { releases, run } = setup(() => reply('cancelled'), 1, { state: 'canceling' }, [
      { state: 'running' },
    ]);
    expect(await run('cancel')).toMatchObject({ state: 'canceled' });
    expect(releases.tasks(REL)).toEqual(['canceled']);
  });

  it('abort records the orchestration error and fails the release through cancel', async () => {
    const { releases, deps, run } = setup(() => reply('canceled'), 1, { state: 'running' }, [
      { state: 'running' },
    ]);
    const cause = JSON.stringify({ errorType: 'Boom', errorMessage: 'table missing' });
    expect(await run('abort', { error: { Error: 'Boom', Cause: cause } })).toMatchObject({ next: 'cancel' });
    expect(
      deps.published.some((e) => e.eventType === 'error' && e.message.includes('Boom: table missing')),
    ).toBe(true);
    expect(await run('cancel')).toMatchObject({ state: 'failed' });
    expect(releases.state(REL)).toBe('failed');
  });

  it('a step that finds the release moved elsewhere only routes (no calls, no writes)', async () => {
    const { releases, calls, run } = setup(() => reply('running'), 1, { state: 'canceling' }, [
      { state: 'running' },
    ]);
    expect(await run('start')).toMatchObject({ next: 'cancel', state: 'canceling' });
    expect(await run('publish')).toMatchObject({ next: 'cancel' });
    expect(calls.calls).toEqual([]);
    expect(releases.changes).toEqual([]);
  });

  it('continue claims the next generation and starts its execution; a retried hand-over starts no second one', async () => {
    const { releases, started, run } = setup(() => reply('running'), 1, { state: 'running' }, [
      { state: 'running' },
    ]);
    expect(await run('continue', { generation: 0 })).toMatchObject({ next: 'done' });
    expect((await releases.load(REL))?.extras.generation).toBe(1);
    // The same step again (a Lambda retry after the start): the claim is already there, the name is the same.
    await run('continue', { generation: 0 });
    expect(started).toEqual([`${REL}-g1`, `${REL}-g1`]);
    // A hand-over from a generation that was already superseded starts nothing.
    await releases.exchangeExtras(REL, { set: { generation: 5 } });
    await run('continue', { generation: 3 });
    expect(started).toHaveLength(2);
  });
});
