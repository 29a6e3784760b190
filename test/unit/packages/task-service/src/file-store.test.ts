import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileStore } from '#packages/task-service/src/file-store.js';
import { aTask } from '#test/unit/task-service/tasks.js';

/** Tasks in a file: what one store wrote, the next (after a restart) reads. */
const path = () => join(mkdtempSync(join(tmpdir(), 'kit-store-')), 'nested', 'tasks.json');

describe('fileStore', () => {
  it('keeps tasks and message ids across a restart (a new store on the same file)', async () => {
    const file = path();
    const first = fileStore(file);
    await first.create(aTask());
    await first.update('TA_1', { state: 'running', progress: 30 }, ['pending']);
    expect(await first.claimMessage('msg_1', Date.now() + 60_000)).toBe(true);
    const second = fileStore(file);
    expect(await second.get('TA_1')).toEqual(aTask({ state: 'running', progress: 30 }));
    expect(await second.claimMessage('msg_1', Date.now() + 60_000)).toBe(false);
  });

  it('creates once, changes only from the states given, and answers copies', async () => {
    const store = fileStore(path());
    await store.create(aTask());
    expect(await store.create(aTask({ release_id: 'RE_2' }))).toEqual(aTask());
    expect(await store.update('TA_1', { state: 'canceled' }, ['running'])).toBeUndefined();
    const got = await store.get('TA_1');
    if (got) got.state = 'failed';
    expect((await store.get('TA_1'))?.state).toBe('pending');
  });

  it.each(['__proto__', 'constructor', 'toString'])(
    'keeps a task and a message with the id %s as any other, across a restart, never an inherited property',
    async (id) => {
      const file = path();
      const store = fileStore(file);
      expect(await store.get(id)).toBeUndefined();
      expect(await store.update(id, { state: 'running' })).toBeUndefined();
      expect(await store.claimMessage(id, Date.now() + 60_000)).toBe(true);
      const task = aTask({ task_id: id });
      expect(await store.create(task)).toEqual(task);
      expect(await store.update(id, { state: 'running', progress: 5 }, ['pending'])).toEqual({
        ...task,
        state: 'running',
        progress: 5,
      });
      const again = fileStore(file);
      expect(await again.get(id)).toEqual({ ...task, state: 'running', progress: 5 });
      expect(await again.claimMessage(id, Date.now() + 60_000)).toBe(false);
      expect(await again.get('TA_other')).toBeUndefined();
    },
  );

  it('forgets expired message ids when it writes', async () => {
    const file = path();
    let now = 0;
    const store = fileStore(file, () => now);
    await store.claimMessage('old', 10);
    now = 20;
    await store.claimMessage('new', 100);
    expect(Object.keys(JSON.parse(readFileSync(file, 'utf8')).messages)).toEqual(['new']);
    expect(await store.claimMessage('old', 100)).toBe(true);
  });

  it('refuses to start on a file that is not JSON, rather than lose its tasks', () => {
    const file = path();
    fileStore(file);
    writeFileSync(file, '{broken');
    expect(() => fileStore(file)).toThrow(/not readable/);
  });
});
