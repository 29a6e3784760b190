import { describe, expect, it } from 'vitest';
import { cancelRelease } from '#functions/orchestration/cancel-step.js';
import { runHealthChecks } from '#functions/orchestration/health-check.js';
import { METRIC } from '#functions/shared/metric-names.js';
import { captureOutput } from '#test/helpers/emf.js';
import { MemoryReleases, memoryDeps, reply, ScriptedCalls, STEPS_CONFIG, services } from './fakes.js';

describe('health check bookkeeping', () => {
  function setup(status: (url: string) => any) {
    const releases = new MemoryReleases();
    releases.add({ id: 'RE_1', state: 'running' }, [{ state: 'running' }, { state: 'staged' }]);
    const calls = new ScriptedCalls(() => reply('canceled'), status);
    const deps = memoryDeps(releases, calls, services(2));
    const woken: string[] = [];
    const check = () =>
      runHealthChecks(deps, { drive: async (id) => void woken.push(id) }, { failures: 3, timeoutMs: 100 });
    return { releases, deps, check, woken };
  }
  const down = { ok: false as const, kind: 'status' as const, reason: 'answered status 503' };

  it('counts consecutive failures in last_ok_status and goes down at the third, failing work in progress only', async () => {
    const { releases, deps, check, woken } = setup(() => down);
    await check();
    await check();
    expect(deps.health.get('TS_00000000')).toEqual({ healthStatus: 'ok', lastOkStatus: 2 });
    expect(releases.state('RE_1')).toBe('running');
    const report = await check();
    expect(deps.health.get('TS_00000000')).toEqual({ healthStatus: 'down', lastOkStatus: 3 });
    expect(report.down).toEqual(['TS_00000000', 'TS_00000001']);
    expect(releases.tasks('RE_1')).toEqual(['failed', 'staged']);
    expect(releases.state('RE_1')).toBe('canceling');
    expect(woken).toEqual(['RE_1']);
  });

  it('resets the count with a 200', async () => {
    let ok = false;
    const { deps, check } = setup(() => (ok ? { ok: true, body: { name: 'x' } } : down));
    await check();
    ok = true;
    await check();
    expect(deps.health.get('TS_00000000')).toEqual({ healthStatus: 'ok', lastOkStatus: 0 });
  });

  it('a service that goes down while publishing fails its task; one that published stays published, and is told', async () => {
    const releases = new MemoryReleases();
    releases.add({ id: 'RE_1', state: 'publishing' }, [{ state: 'published' }, { state: 'publishing' }]);
    const calls = new ScriptedCalls(
      () => reply('canceled'),
      () => down,
    );
    const deps = memoryDeps(releases, calls, services(2));
    for (let i = 0; i < 3; i++)
      await runHealthChecks(deps, { drive: async () => {} }, { failures: 3, timeoutMs: 100 });
    // Only work in progress fails: the published task is not rewritten, though its service is down too.
    expect(releases.tasks('RE_1')).toEqual(['published', 'failed']);
    expect(releases.state('RE_1')).toBe('canceling');
    await cancelRelease(deps, 'RE_1', STEPS_CONFIG);
    expect(calls.calls.map((c) => `${c.action} ${c.taskId}`)).toEqual([
      'cancel TA_00000000',
      'cancel TA_00000001',
    ]);
    expect(releases.tasks('RE_1')).toEqual(['published', 'failed']);
    expect(releases.state('RE_1')).toBe('failed');
    expect(deps.published.find((e) => e.taskId === 'TA_00000000')?.message).toBe(
      'task TA_00000000 had already published; cancel was sent to task service "svc0" (TS_00000000) to discard ' +
        'its publication, and it answered canceled; the task stays published',
    );
  });
});

describe('what the health check reports for the TaskServiceDown alarm', () => {
  it('the number of enabled services that are down, every run, zero once they answer again', async () => {
    const output = captureOutput();
    try {
      const list = services(3);
      list[2].enabled = false;
      let answer: 'down' | 'ok' = 'down';
      const calls = new ScriptedCalls(
        () => reply('canceled'),
        () =>
          answer === 'down'
            ? { ok: false as const, kind: 'status' as const, reason: 'answered 503' }
            : reply('ok'),
      );
      const deps = memoryDeps(new MemoryReleases(), calls, list);
      const check = () => runHealthChecks(deps, { drive: async () => {} }, { failures: 2, timeoutMs: 100 });
      const downs = () =>
        output
          .points()
          .filter((p) => p.name === METRIC.taskServicesDown)
          .map((p) => p.value);
      await check();
      await check();
      // Failing once is not down; at the second failure all three are down, and two of them are enabled.
      expect(downs()).toEqual([0, 2]);
      answer = 'ok';
      await check();
      expect(downs()).toEqual([0, 2, 0]);
    } finally {
      output.stop();
    }
  });
});
