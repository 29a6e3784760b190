import { describe, expect, it } from 'vitest';
import { applyChange, memoryStore } from '#packages/task-service/src/store.js';
import { aTask } from '#test/unit/task-service/tasks.js';

describe('memoryStore', () => {
  it('creates a task once: a second create answers the first', async () => {
    const store = memoryStore();
    expect(await store.create(aTask())).toEqual(aTask());
    expect(await store.create(aTask({ release_id: 'RE_2' }))).toEqual(aTask());
    expect(await store.get('TA_1')).toEqual(aTask());
    expect(await store.get('TA_2')).toBeUndefined();
  });

  it('changes a task only from the states given', async () => {
    const store = memoryStore();
    await store.create(aTask());
    expect(await store.update('TA_1', { state: 'running' }, ['pending'])).toMatchObject({ state: 'running' });
    expect(await store.update('TA_1', { state: 'canceled' }, ['pending'])).toBeUndefined();
    expect(await store.update('TA_1', { progress: 40, request_id: 'r' })).toMatchObject({
      state: 'running',
      progress: 40,
      request_id: 'r',
    });
    expect(await store.update('TA_9', { progress: 1 })).toBeUndefined();
  });

  it('claims a message id once until it expires', async () => {
    let now = 0;
    const store = memoryStore(() => now);
    expect(await store.claimMessage('msg_1', 1000)).toBe(true);
    expect(await store.claimMessage('msg_1', 1000)).toBe(false);
    now = 1000;
    expect(await store.claimMessage('msg_1', 2000)).toBe(true);
  });

  it('exposes its tasks, changed in place', async () => {
    const store = memoryStore();
    await store.create(aTask());
    const held = store.tasks.get('TA_1');
    await store.update('TA_1', { progress: 70 });
    expect(held?.progress).toBe(70);
  });
});

describe('memoryStore ids', () => {
  it.each(['__proto__', 'constructor', 'toString'])(
    'keeps a task with the id %s as any other',
    async (id) => {
      const store = memoryStore();
      expect(await store.get(id)).toBeUndefined();
      expect(await store.update(id, { state: 'running' })).toBeUndefined();
      expect(await store.claimMessage(id, Date.now() + 60_000)).toBe(true);
      const task = aTask({ task_id: id });
      expect(await store.create(task)).toBe(task);
      expect(await store.get(id)).toBe(task);
      expect(await store.claimMessage(id, Date.now() + 60_000)).toBe(false);
    },
  );
});

describe('applyChange', () => {
  it('changes only the fields given', () => {
    expect(applyChange(aTask(), { progress: 5 })).toEqual(aTask({ progress: 5 }));
  });
});
