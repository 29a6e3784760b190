import { describe, expect, it } from 'vitest';
import { getTask, listTasks, type TaskReader } from '#functions/coordinator/tasks.js';

/** The read rule of tasks: a task service reads its own tasks, and a token that speaks for one reads no other's. */
const TASKS = { TA_A: 'TS_A', TA_B: 'TS_B', TA_U: 'TS_U' } as Record<string, string>;
const CLIENTS = { TS_A: 'client-a', TS_B: 'client-b', TS_U: null } as Record<string, string | null>;
const deps = {
  releases: {
    getTask: async (id: string) => (TASKS[id] ? ({ id, taskServiceId: TASKS[id] } as never) : null),
    listTasks: async () => ({ items: [], count: 0 }) as never,
  } as never,
  taskServices: {
    get: async (id: string) => (id in CLIENTS ? ({ id, clientId: CLIENTS[id] } as never) : null),
  },
};
const page = { limit: 10, offset: 0 } as never;
const reader = (r: Partial<TaskReader>): TaskReader => ({
  isAdmin: false,
  isService: false,
  identity: null,
  ...r,
});
const ownClient = reader({ isService: true, identity: 'client-a', boundClientOnly: true });
const serviceToken = reader({ isService: true, identity: 'client-a' });

const status = (p: Promise<unknown>) =>
  p.then(
    () => 200,
    (err) => (err.code === 'forbidden' ? 403 : err.code === 'not_found' ? 404 : 500),
  );

describe('getTask', () => {
  it('lets an own client read its service’s task only; a service token no task of a service bound to another', async () => {
    expect(await status(getTask(deps, 'TA_A', ownClient))).toBe(200);
    expect(await status(getTask(deps, 'TA_B', ownClient))).toBe(403);
    expect(await status(getTask(deps, 'TA_U', ownClient))).toBe(403);
    expect(await status(getTask(deps, 'TA_A', serviceToken))).toBe(200);
    expect(await status(getTask(deps, 'TA_U', serviceToken))).toBe(200);
    expect(await status(getTask(deps, 'TA_B', serviceToken))).toBe(403);
  });

  it('holds neither admins nor readers, and answers 404 before judging', async () => {
    expect(await status(getTask(deps, 'TA_B', reader({ isAdmin: true })))).toBe(200);
    expect(await status(getTask(deps, 'TA_B', reader({})))).toBe(200);
    expect(await status(getTask(deps, 'TA_NONE', ownClient))).toBe(404);
  });
});

describe('listTasks', () => {
  it('asks an own client to name its service, and refuses another’s; a service token too', async () => {
    expect(await status(listTasks(deps, { taskServiceId: 'TS_A' }, page, ownClient))).toBe(200);
    expect(await status(listTasks(deps, {}, page, ownClient))).toBe(403);
    expect(await status(listTasks(deps, { releaseId: 'RE_1' }, page, ownClient))).toBe(403);
    expect(await status(listTasks(deps, { taskServiceId: 'TS_B' }, page, ownClient))).toBe(403);
    expect(await status(listTasks(deps, { taskServiceId: 'TS_B' }, page, serviceToken))).toBe(403);
    expect(await status(listTasks(deps, {}, page, serviceToken))).toBe(200);
  });
});
