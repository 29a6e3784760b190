import type { Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import * as kit from '#packages/task-service/src/index.js';

/** The reference task service on the kit (packages/task-service): fake work of a configurable length. */
export type Action = kit.TaskAction;
export const { secretFile } = kit;
export const clientCredentials = (tokenUrl: string, clientId: string, clientSecret: string) =>
  kit.clientCredentials({ tokenUrl, clientId, clientSecret });

export interface FakeWork {
  stageSeconds: number;
  publishSeconds: number;
  /** Progress reports (callbacks) along each piece of work. */
  progressSteps: number;
  /** Actions answered 503 (failure injection); "staging" / "publishing" make the work itself fail. */
  failAt: readonly (Action | 'staging' | 'publishing')[];
}

export function fakeWork(opts: FakeWork, ready: () => boolean = () => true): kit.TaskWork {
  const fake = (seconds: number, fails: boolean) => async (task: kit.TaskContext) => {
    for (let i = 1; i <= opts.progressSteps; i++) {
      await sleep((seconds * 1000) / opts.progressSteps, undefined, { signal: task.signal });
      if (i < opts.progressSteps) await task.progress((i / opts.progressSteps) * 100);
    }
    if (fails) throw new Error('injected failure');
  };
  return {
    start: fake(opts.stageSeconds, opts.failAt.includes('staging')),
    publish: fake(opts.publishSeconds, opts.failAt.includes('publishing')),
    status: ready,
    beforeAction: (action) => {
      if (opts.failAt.includes(action)) throw new Error('injected failure');
    },
  };
}

export type TaskServiceOptions = Omit<kit.TaskServiceOptions, 'store'> & FakeWork;
export interface RunningTaskService {
  url: string;
  server: Server;
  tasks: Map<string, kit.StoredTask>;
  /** Set to false to make GET /status answer 503. */
  ready: boolean;
  stop(): Promise<void>;
  /** As a kill and a restart: the work stops, then a new service over the same tasks and port resumes it. */
  restart(): Promise<void>;
}

/** The service in this process, its tasks in memory (tests, the demo, the benchmarks). */
export async function startTaskService(opts: TaskServiceOptions, listen: { port: number; host: string }) {
  const store = kit.memoryStore();
  const work = fakeWork(opts, () => service.ready);
  const start = async (at: { port: number; host: string }) => {
    const svc = kit.createTaskService(work, { ...opts, store });
    return { svc, running: await kit.serve(svc, at) };
  };
  let current = await start(listen);
  const service: RunningTaskService = {
    url: current.running.url,
    server: current.running.server,
    tasks: store.tasks,
    ready: true,
    stop: () => current.running.stop(),
    restart: async () => {
      await current.running.stop();
      current = await start({ port: Number(new URL(service.url).port), host: listen.host });
      service.server = current.running.server;
      await current.svc.resume();
    },
  };
  return service;
}
