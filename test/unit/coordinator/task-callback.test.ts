import { describe, expect, it } from 'vitest';
import { MAX_TASKS_PER_RELEASE } from '../../../functions/coordinator/releases.js';
import {
  parseProgress,
  reportTask,
  type TaskCallbackDeps,
} from '../../../functions/coordinator/task-callback.js';
import { MAX_LIMIT } from '../../../functions/shared/list.js';

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
  /** Two tasks of one running release; the repository answers from this map and records the changes written. */
  function release() {
    const tasks = new Map(
      ['TA_1', 'TA_2'].map((id) => [
        id,
        {
          id,
          releaseId: 'RE_1',
          taskServiceId: `TS_${id}`,
          serviceName: 's',
          state: 'running' as string,
          progress: 0,
          createdAt: '2026-11-26T00:00:00.000000Z',
        },
      ]),
    );
    const woken: string[] = [];
    const deps = {
      releases: {
        getTask: async (id: string) => ({ ...tasks.get(id) }),
        stateOf: async () => 'running',
        applyChange: async (c: { tasks: { taskId: string; toState?: string }[] }) => {
          for (const t of c.tasks)
            if (t.toState) (tasks.get(t.taskId) as { state: string }).state = t.toState;
          return [];
        },
        listTasks: async () => ({ count: tasks.size, items: [...tasks.values()].map((t) => ({ ...t })) }),
      },
      taskServices: { get: async () => null },
      orchestrator: { wake: async (id: string) => void woken.push(id) },
      publisher: { publish: async () => {} },
    } as unknown as TaskCallbackDeps;
    return { deps, woken };
  }
  const service = { isAdmin: false, identity: 'svc' };

  it('wakes the release only with the report that completes its phase', async () => {
    const { deps, woken } = release();
    await reportTask(deps, 'TA_1', { state: 'staged' }, service);
    expect(woken).toEqual([]);
    await reportTask(deps, 'TA_2', { state: 'staged' }, service);
    expect(woken).toEqual(['RE_1']);
  });

  it('reads the whole release in one page: a release never has more tasks than a page holds', () => {
    expect(MAX_TASKS_PER_RELEASE).toBeLessThanOrEqual(MAX_LIMIT);
  });
});
