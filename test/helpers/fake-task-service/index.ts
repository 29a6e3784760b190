import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTaskService, memoryStore, type TaskStore } from '#packages/task-service/src/index.js';
import { callbackSender } from './callbacks.js';
import { startFront } from './front.js';
import type { FakeTaskService, FakeTaskServiceOptions } from './types.js';
import { fakeWork } from './work.js';

export type * from './types.js';

/**
 * The fake task service of the tests and the benchmarks: the task-service kit (packages/task-service) with fake
 * work, over real HTTP, with hooks that make it misbehave. The kit answers the API as the contract says (states,
 * repeats, unknown tasks, tokens and signatures when asked to check them); the options choose how long the work
 * takes (a time, a number of polls, or none), whether its end is reported by callback or only by poll, and the
 * faults: fail, time out, bad JSON or a transient 503 at an action, a wrong state, a closed port, a delay, the old
 * spelling, and the quirks that each break one rule of the contract.
 *
 * examples/task-service is the reference service that authors copy; this one is for playing the other side.
 */
export async function startFakeTaskService(options: FakeTaskServiceOptions = {}): Promise<FakeTaskService> {
  const name = options.name ?? 'fake task service';
  const stopping = new AbortController();
  const tasks = memoryStore();
  const store: typeof tasks = options.quirks?.acceptReplays
    ? { ...tasks, claimMessage: async () => true }
    : tasks;
  const fake: FakeTaskService = {
    name,
    url: '',
    status: options.status ?? 'ok',
    actions: { ...options.actions },
    requests: [],
    received: [],
    callbacks: [],
    tasks: tasks.tasks,
    actionsFor: (taskId) => fake.received.filter((r) => r.taskId === taskId).map((r) => r.action),
    idle: () => kit.idle(),
    close: async () => {},
    stop: async () => {},
    restart: async () => {},
  };
  const callback = callbackSender(options, fake.callbacks, stopping.signal);
  /** What the publishOnce quirk has published: it outlives a restart, as a publication would. */
  const published = new Set<string>();
  const makeKit = () =>
    createTaskService(fakeWork(options, tasks, callback, published), {
      name,
      version: '1.0.0',
      auth: options.quirks?.anyAudience ? { mode: 'none' } : (options.auth ?? { mode: 'none' }),
      signingSecrets: options.signingSecrets,
      store: store satisfies TaskStore,
      log: options.log,
    });
  let kit = makeKit();
  let front = await startFront(fake, kit, tasks, options);
  const port = new URL(front.url).port;
  fake.url = front.url;
  fake.close = () => front.close();
  fake.stop = async () => {
    stopping.abort();
    kit.stop();
    await front.close();
  };
  fake.restart = async () => {
    // As a process that is killed: its work stops where it is, its port closes; the tasks stay in the store.
    kit.stop();
    await front.close();
    kit = makeKit();
    front = await startFront(fake, kit, tasks, options, Number(port));
    await kit.resume();
  };
  return fake;
}

/** `n` fake task services alike but for their names (`<name>-<i>`), e.g. for a benchmark's releases. */
export async function startFakeFleet(
  n: number,
  options: FakeTaskServiceOptions = {},
): Promise<{ fakes: FakeTaskService[]; urls: string[]; stop(): Promise<void> }> {
  const fakes = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      startFakeTaskService({ ...options, name: `${options.name ?? 'fake task service'}-${i}` }),
    ),
  );
  return {
    fakes,
    urls: fakes.map((f) => f.url),
    stop: async () => {
      await Promise.all(fakes.map((f) => f.stop()));
    },
  };
}

/** A URL on which nothing listens: connections are refused. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return `http://127.0.0.1:${port}`;
}
