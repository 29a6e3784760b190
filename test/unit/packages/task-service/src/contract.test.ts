import { describe, expect, it } from 'vitest';
import {
  ACTION_RULES,
  ActionRequest,
  CALLBACK_TRANSITIONS,
  REPLY_STATES,
  TASK_ACTIONS,
  TASK_STATES,
  TaskCallback,
} from '#packages/task-service/src/contract.js';

/** The contract's rules agree with each other. */
describe('the task-service contract', () => {
  it('gives every action a rule for every state, and every state a rule reaches is a reply the action allows', () => {
    for (const action of TASK_ACTIONS)
      for (const state of TASK_STATES) {
        const rule = ACTION_RULES[action][state];
        expect(rule, `${action} of a ${state} task`).toBeDefined();
        if (rule === 'reject') continue;
        // A working state's repeat may answer any later state the work reaches.
        if (rule !== 'same') expect(REPLY_STATES[action]).toContain(rule);
      }
  });

  it('parses each action and refuses others', () => {
    expect(ActionRequest.parse({ action: 'cancel', task_id: 'T', release_id: 'R', extra: 1 })).toMatchObject({
      action: 'cancel',
      extra: 1,
    });
    expect(ActionRequest.safeParse({ action: 'pause', task_id: 'T', release_id: 'R' }).success).toBe(false);
  });

  it('takes callbacks of state, progress or both, nothing else', () => {
    expect(TaskCallback.safeParse({ state: 'staged' }).success).toBe(true);
    expect(TaskCallback.safeParse({}).success).toBe(false);
    expect(TaskCallback.safeParse({ progress: 101 }).success).toBe(false);
    expect(TaskCallback.safeParse({ progress: 5, note: 'x' }).success).toBe(false);
  });

  it('ends nothing from an end state', () => {
    for (const end of ['published', 'canceled', 'failed'] as const)
      expect(CALLBACK_TRANSITIONS[end]).toEqual([]);
  });
});
