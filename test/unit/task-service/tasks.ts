import type { StoredTask } from '#packages/task-service/src/store.js';

/** A stored task for the store tests. */
export const aTask = (over: Partial<StoredTask> = {}): StoredTask => ({
  task_id: 'TA_1',
  release_id: 'RE_1',
  studies: ['SD_1'],
  state: 'pending',
  progress: 0,
  date_submitted: '2026-11-26T00:00:00.000Z',
  ...over,
});
