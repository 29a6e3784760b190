import { describe, expect, it } from 'vitest';
import {
  ACTION_RULES,
  CALLBACK_TRANSITIONS,
  END_STATES,
  REPLY_STATES,
  TASK_ACTIONS,
  TASK_STATES,
} from '#packages/task-service/src/protocol.js';

/** The protocol's rules agree with each other. */
describe('the task-service protocol', () => {
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

  it('ends nothing from an end state, and reaches every state but pending by some callback', () => {
    for (const end of END_STATES) expect(CALLBACK_TRANSITIONS[end]).toEqual([]);
    const reached = new Set(Object.values(CALLBACK_TRANSITIONS).flat());
    expect(TASK_STATES.filter((s) => !reached.has(s))).toEqual(['pending']);
  });
});
