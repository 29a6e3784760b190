import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { failTasks, taskPart } from '#functions/orchestration/changes.js';
import {
  CALLBACK_TRANSITIONS,
  END_STATES,
  TASK_STATES,
  type TaskState,
} from '#packages/task-service/src/protocol.js';
import { STEPS_RELEASE as REL, stepsSetup } from './fakes.js';

/**
 * docs/task-service-api.md states the transitions a report may make, docs/api.md the final states; the code that
 * changes tasks must say the same.
 */
const doc = (name: string) => readFileSync(resolve(import.meta.dirname, '../../../docs', name), 'utf8');
const API_MD = doc('api.md');
const TASK_SERVICE_API_MD = doc('task-service-api.md');

/** The "Allowed changes" table of PATCH /tasks/<id>: from -> to. */
function documentedTransitions(): Record<string, string[]> {
  const at = TASK_SERVICE_API_MD.indexOf('| From | To |');
  expect(at).toBeGreaterThan(0);
  const rows = TASK_SERVICE_API_MD.slice(at).split('\n').slice(2);
  const out: Record<string, string[]> = {};
  for (const row of rows) {
    if (!row.startsWith('|')) break;
    const [from, to] = row
      .split('|')
      .slice(1, 3)
      .map((c) => [...c.matchAll(/`(\w+)`/g)].map((m) => m[1]));
    // The final states' row ("none: final") names no transition.
    for (const state of from) out[state] = to;
  }
  return out;
}

describe('the task-state rules of the docs and the code agree', () => {
  it('the transitions a task service may report are the documented ones; the final states have none', () => {
    const documented = documentedTransitions();
    const working = TASK_STATES.filter((s) => !END_STATES.includes(s));
    expect(Object.keys(documented).sort()).toEqual([...TASK_STATES].sort());
    for (const s of END_STATES) expect(documented[s], s).toEqual([]);
    for (const s of working)
      expect([...CALLBACK_TRANSITIONS[s]].sort(), s).toEqual([...documented[s]].sort());
    for (const s of END_STATES) expect(CALLBACK_TRANSITIONS[s], s).toEqual([]);
  });

  it('the final states the docs name are the code’s', () => {
    const sentence = API_MD.match(
      /`(\w+)`, `(\w+)` and `(\w+)` are final, for releases\s+and for tasks alike/,
    );
    expect(sentence?.slice(1).sort()).toEqual([...END_STATES].sort());
  });

  it('the orchestration never writes a change out of a final state', () => {
    for (const from of END_STATES)
      for (const to of TASK_STATES.filter((s) => s !== from)) {
        const task = { id: 'TA_1', state: from as TaskState } as Parameters<typeof taskPart>[0];
        expect(() => taskPart(task, to), `${from} -> ${to}`).toThrow(/a final state/);
      }
  });

  it('a failure recorded against a task that published leaves it published (and the release still fails)', async () => {
    const { releases, deps } = stepsSetup(
      () => ({ ok: false, kind: 'timeout', reason: 'x' }),
      2,
      {
        state: 'publishing',
      },
      [{ state: 'published' }, { state: 'publishing' }],
    );
    const outcome = await failTasks(deps, REL, [
      { taskId: 'TA_00000000', reason: 'late failure' },
      { taskId: 'TA_00000001', reason: 'timed out' },
    ]);
    expect(outcome).toBe('canceling');
    expect(releases.tasks(REL)).toEqual(['published', 'failed']);
    expect(deps.published.some((e) => e.taskId === 'TA_00000000')).toBe(false);
  });
});
