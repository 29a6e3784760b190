import { describe, expect, it } from 'vitest';
import { ActionRequest, TaskCallback } from '#packages/task-service/src/contract.js';

/** The contract's schemas take the wire forms of the protocol and refuse others. */
describe('the task-service contract', () => {
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
});
