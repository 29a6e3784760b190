import { describe, expect, it, vi } from 'vitest';
import { PUBLISH_REQUESTED_AT } from '#functions/coordinator/model.js';
import type { ExecutionStatus, Executions } from '#functions/orchestration/ports.js';
import { reconcile } from '#functions/orchestration/reconcile.js';
import { WakeLatch } from '#functions/orchestration/wake-latch.js';
import { METRIC } from '#functions/shared/metric-names.js';
import { captureOutput } from '#test/helpers/emf.js';
import { MemoryReleases } from './fakes.js';

/** Executions by name, as Step Functions keeps them: a name is started at most once. */
class MemoryExecutions implements Executions {
  status_ = new Map<string, ExecutionStatus>();
  starts: string[] = [];
  failFor = new Set<string>();
  async start(releaseId: string, generation: number) {
    const name = `${releaseId}-g${generation}`;
    this.starts.push(name);
    if (this.status_.has(name)) return 'exists' as const;
    this.status_.set(name, 'running');
    return 'started' as const;
  }
  async status(releaseId: string, generation: number): Promise<ExecutionStatus> {
    if (this.failFor.has(releaseId))
      throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
    return this.status_.get(`${releaseId}-g${generation}`) ?? 'missing';
  }
  running() {
    return [...this.status_].filter(([, s]) => s === 'running').map(([n]) => n);
  }
}

function setup() {
  const releases = new MemoryReleases();
  const executions = new MemoryExecutions();
  const answered: string[] = [];
  const latch = new WakeLatch(releases, {
    succeed: async (token) => {
      answered.push(token);
      return 'delivered';
    },
  });
  const run = () => reconcile({ releases, executions, latch, concurrency: 4 });
  return { releases, executions, answered, run };
}

describe('the reconciler', () => {
  it('starts an execution for a release whose start never happened (POST /releases could not start it)', async () => {
    const { releases, executions, run } = setup();
    releases.add({ id: 'RE_1', state: 'initializing' });
    const report = await run();
    expect(report.started).toEqual([{ releaseId: 'RE_1', generation: 0 }]);
    expect(executions.running()).toEqual(['RE_1-g0']);
  });

  it('hands a release whose execution ended before the release did to the next generation', async () => {
    const { releases, executions, run } = setup();
    releases.add({ id: 'RE_1', state: 'publishing' });
    await releases.exchangeExtras('RE_1', { set: { generation: 4 } });
    executions.status_.set('RE_1-g4', 'ended');
    expect((await run()).started).toEqual([{ releaseId: 'RE_1', generation: 5 }]);
    expect((await releases.load('RE_1'))?.extras.generation).toBe(5);
    expect(executions.running()).toEqual(['RE_1-g5']);
  });

  it('leaves running executions and terminal releases alone', async () => {
    const { releases, executions, run } = setup();
    releases.add({ id: 'RE_1', state: 'running' });
    releases.add({ id: 'RE_2', state: 'published' });
    releases.add({ id: 'RE_3', state: 'failed' });
    executions.status_.set('RE_1-g0', 'running');
    const report = await run();
    expect(report).toMatchObject({ active: 1, running: 1, started: [], woken: [] });
    expect(executions.starts).toEqual([]);
  });

  it('delivers a wake again when the first delivery failed, or a publish reached no waiting execution', async () => {
    const { releases, executions, answered, run } = setup();
    releases.add({ id: 'RE_1', state: 'running' });
    releases.add({ id: 'RE_2', state: 'publishing' });
    releases.add({ id: 'RE_3', state: 'staged' });
    for (const id of ['RE_1', 'RE_2', 'RE_3']) executions.status_.set(`${id}-g0`, 'running');
    await releases.exchangeExtras('RE_1', { set: { waitToken: 't1', waitKind: 'poll', wakePending: true } });
    await releases.exchangeExtras('RE_2', { set: { waitToken: 't2', waitKind: 'staged' } });
    await releases.exchangeExtras('RE_3', { set: { waitToken: 't3', waitKind: 'staged' } });
    expect((await run()).woken.sort()).toEqual(['RE_1', 'RE_2']);
    expect(answered.sort()).toEqual(['t1', 't2']);
    // Delivered: nothing is owed any more.
    expect((await run()).woken).toEqual([]);
  });

  it('overlapping runs start one execution per generation', async () => {
    const { releases, executions, run } = setup();
    for (let i = 0; i < 5; i++) releases.add({ id: `RE_${i}`, state: 'running' });
    executions.status_.set('RE_0-g0', 'ended');
    await Promise.all([run(), run(), run()]);
    expect(executions.running().sort()).toEqual(['RE_0-g1', 'RE_1-g0', 'RE_2-g0', 'RE_3-g0', 'RE_4-g0']);
  });

  it('one release it cannot look at does not stop the others', async () => {
    const { releases, executions, run } = setup();
    releases.add({ id: 'RE_1', state: 'running' });
    releases.add({ id: 'RE_2', state: 'running' });
    executions.failFor.add('RE_1');
    const report = await run();
    expect(report.failed).toEqual(['RE_1']);
    expect(report.started).toEqual([{ releaseId: 'RE_2', generation: 0 }]);
  });
});

describe('what the reconciler reports for the alarms', () => {
  const HOUR = 3600_000;
  const NOW = Date.parse('2026-03-10T12:00:00Z');
  const iso = (ms: number) => new Date(ms).toISOString().replace('Z', '000Z');

  it('the age of the oldest phase at work from the phase’s start (ReleaseStuck), beside the oldest release’s age', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
    const output = captureOutput();
    try {
      const { releases, executions, run } = setup();
      // Staging since its creation 10 h ago.
      releases.add({ id: 'RE_1', state: 'running', createdAt: iso(NOW - 10 * HOUR) });
      // Created 30 h ago, publishing since 2 h: its phase is 2 h old, not 30.
      releases.add({ id: 'RE_2', state: 'publishing', createdAt: iso(NOW - 30 * HOUR) });
      await releases.exchangeExtras('RE_2', { set: { [PUBLISH_REQUESTED_AT]: NOW - 2 * HOUR } });
      // Staged for 40 h, waiting for an admin: no phase at work, no limit.
      releases.add({ id: 'RE_3', state: 'staged', createdAt: iso(NOW - 40 * HOUR) });
      for (const id of ['RE_1', 'RE_2', 'RE_3']) executions.status_.set(`${id}-g0`, 'running');
      await run();
      const last = (name: string) =>
        output
          .points()
          .filter((p) => p.name === name)
          .at(-1)?.value;
      expect(last(METRIC.oldestPhaseAge)).toBe(10 * 3600);
      expect(last(METRIC.oldestActiveReleaseAge)).toBe(40 * 3600);

      // Only a staged release: no phase at work, 0 (so the alarm returns to OK).
      const quiet = setup();
      quiet.releases.add({ id: 'RE_4', state: 'staged', createdAt: iso(NOW - 50 * HOUR) });
      quiet.executions.status_.set('RE_4-g0', 'running');
      await quiet.run();
      expect(last(METRIC.oldestPhaseAge)).toBe(0);
    } finally {
      output.stop();
      vi.useRealTimers();
    }
  });
});
