import { type AuthOptions, tokenChecker } from './auth.js';
import { type CallbackOutcome, type Report, reporter } from './callbacks.js';
import {
  ACTION_RULES,
  ActionRequest,
  type ErrorReply,
  REQUEST_ID_HEADER,
  type ServiceStatus,
  TASK_ACTIONS,
  type TaskAction,
  type TaskReply,
  type TaskState,
} from './contract.js';
import { KitError, TaskEndedError } from './errors.js';
import { type Secrets, signatureChecker } from './signature.js';
import { memoryStore, type StoredTask, type TaskStore } from './store.js';
import type { TokenSource } from './token.js';

/**
 * What the work of one task is given: the task, a signal that aborts it, and its progress reports.
 *
 * @example
 * ```ts
 * import type { TaskContext } from '@release-coordinator/task-service';
 *
 * async function stage(task: TaskContext) {
 *   for (const [i, study] of task.studies.entries()) {
 *     task.log(`staging ${study} for ${task.releaseId}`);
 *     await task.progress(Math.round((100 * (i + 1)) / task.studies.length));
 *   }
 * }
 * ```
 */
export interface TaskContext {
  taskId: string;
  releaseId: string;
  /** The release's study ids. */
  studies: string[];
  /** The coordinator's correlation id of the action that started this work. */
  requestId?: string;
  /** Aborted when the task is canceled, or the coordinator says the task or its release has ended. */
  signal: AbortSignal;
  /**
   * Records and reports progress (0 to 100). Throws TaskEndedError once the task or its release has ended, so that
   * work which reports progress stops there even if it never looks at `signal`.
   */
  progress(percent: number): Promise<void>;
  /** Logs a line about this task (through the service's `log`). */
  log(line: string): void;
}

/**
 * What a service's tasks do: the author's part. `start` stages, `publish` makes the staged work public; the others
 * are optional.
 *
 * @example
 * ```ts
 * import type { TaskWork } from '@release-coordinator/task-service';
 *
 * const work: TaskWork = {
 *   async start(task) {
 *     await task.progress(100);
 *   },
 *   async publish(task) {
 *     task.log('published');
 *   },
 *   status: () => true,
 * };
 * ```
 */
export interface TaskWork {
  /** Called on the first initialize of a task; throwing refuses it (503). */
  initialize?(task: TaskContext): Promise<void> | void;
  /** The staging. Resolving makes the task `staged`, throwing `failed`. */
  start(task: TaskContext): Promise<void> | void;
  /** The publishing. Resolving makes the task `published`, throwing `failed`. */
  publish(task: TaskContext): Promise<void> | void;
  /** Called once when a task that had not ended is canceled (its signal is already aborted): discard the work. */
  cancel?(task: TaskContext): Promise<void> | void;
  /** Readiness for GET /status: false (or a message) answers 503. Default: ready. */
  status?(): Promise<boolean | string> | boolean | string;
  /** Called before every action; throwing refuses it with a 503 (e.g. maintenance, failure injection). */
  beforeAction?(action: TaskAction, request: ActionRequest): Promise<void> | void;
}

/**
 * How a service runs: its name, the checks of the coordinator's requests, where tasks are kept and where callbacks
 * go. `settingsFromEnv` reads them from the environment.
 *
 * @example
 * ```ts
 * import {
 *   clientCredentials,
 *   fileStore,
 *   secretFile,
 *   type TaskServiceOptions,
 * } from '@release-coordinator/task-service';
 *
 * const options: TaskServiceOptions = {
 *   name: 'stager',
 *   version: '1.2.0',
 *   auth: { mode: 'jwks', issuer: 'https://auth.example.org' },
 *   signingSecrets: secretFile('.data/webhook-secret'),
 *   store: fileStore('.data/tasks.json'),
 *   coordinatorUrl: 'https://coordinator.example.org',
 *   callbackToken: clientCredentials({
 *     tokenUrl: 'https://auth.example.org/oauth2/token',
 *     clientId: 'stager',
 *     clientSecret: process.env.CLIENT_SECRET ?? '',
 *   }),
 * };
 * ```
 */
export interface TaskServiceOptions {
  /** The name GET /status and every task answer. */
  name: string;
  /** The version GET /status answers (default 1.0.0). */
  version?: string;
  /** The check of the coordinator's token. */
  auth: AuthOptions;
  /** The service's signing secrets (`whsec_…`); unset: signatures are not checked (the token alone is). */
  signingSecrets?: Secrets;
  /** Where tasks are kept (default: memoryStore()). */
  store?: TaskStore;
  /** Where callbacks go; without it the service only answers polls. */
  coordinatorUrl?: string;
  /** The service's own token for callbacks (token.ts: client credentials). */
  callbackToken?: TokenSource;
  /**
   * `background` (a server): answer at once, run the work after; a task found `running` or `publishing` with no
   * work in this process (after a restart) has its work started again at the next action for it. `inline` (Lambda,
   * which freezes after answering): run the work before answering, for work that ends within the action timeout.
   */
  run?: 'background' | 'inline';
  /** Where the service logs its requests, callbacks and work (default: nowhere). */
  log?: (line: string) => void;
  /** The clock, in milliseconds since the epoch (default Date.now). */
  now?: () => number;
  /** The fetch of the token checks and the callbacks (default: the platform's). */
  fetch?: typeof fetch;
  /** Tries per callback (ReporterOptions.attempts). */
  callbackAttempts?: number;
  /** How the callbacks wait between tries (tests pass one that does not). */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * A request as the service core takes it, however it arrived.
 *
 * @example
 * ```ts
 * import type { KitRequest } from '@release-coordinator/task-service';
 *
 * const request: KitRequest = { method: 'GET', path: '/status', headers: {}, body: '' };
 * ```
 */
export interface KitRequest {
  method: string;
  /** The path without the query string. */
  path: string;
  /** Lower-case names. */
  headers: Record<string, string | undefined>;
  body: string;
}

/**
 * The service core's answer, to send as it is.
 *
 * @example
 * ```ts
 * import type { KitResponse } from '@release-coordinator/task-service';
 *
 * const send = (answer: KitResponse) =>
 *   new Response(answer.body, { status: answer.status, headers: answer.headers });
 * ```
 */
export interface KitResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A service made by `createTaskService`: it answers requests, and holds its tasks and work.
 *
 * @example
 * ```ts
 * import { createTaskService, type TaskService } from '@release-coordinator/task-service';
 *
 * const service: TaskService = createTaskService(work, { name: 'stager', auth: { mode: 'none' } });
 * const answer = await service.handle({ method: 'GET', path: '/status', headers: {}, body: '' });
 * ```
 */
export interface TaskService {
  /** Answers one request of the task-service API (GET /status, POST /tasks). */
  handle(request: KitRequest): Promise<KitResponse>;
  /** Where its tasks are. */
  store: TaskStore;
  /** Resolves when no work is running (tests; a graceful stop). */
  idle(): Promise<void>;
  /** Aborts all running work (the tasks keep their state; a restart picks them up again). */
  stop(): void;
}

const WORKING: Partial<Record<TaskState, { phase: 'start' | 'publish'; done: TaskState }>> = {
  running: { phase: 'start', done: 'staged' },
  publishing: { phase: 'publish', done: 'published' },
};

/**
 * The kit's core: the task-service API around an author's work, independent of how requests arrive (`serve` serves
 * it over HTTP, `functionUrlHandler` behind a Lambda function URL). The author supplies what a task does; the kit
 * checks each request (token, signature, replay), keeps the tasks in a store, answers every action as ACTION_RULES
 * say (repeats included), runs the work, and reports it to the coordinator.
 *
 * @example
 * ```ts
 * import { createTaskService, serve } from '@release-coordinator/task-service';
 *
 * const service = createTaskService(
 *   { start: async (task) => task.progress(100), publish: async () => {} },
 *   {
 *     name: 'stager',
 *     auth: { mode: 'verify', authUrl: 'http://127.0.0.1:3002' },
 *     coordinatorUrl: 'http://127.0.0.1:3000',
 *   },
 * );
 * await serve(service, { port: 4000, host: '127.0.0.1' });
 * ```
 */
export function createTaskService(work: TaskWork, opts: TaskServiceOptions): TaskService {
  const store = opts.store ?? memoryStore();
  const now = opts.now ?? Date.now;
  const log = opts.log ?? (() => {});
  const mode = opts.run ?? 'background';
  const checkToken = tokenChecker(opts.auth, opts.fetch);
  const checkSignature = opts.signingSecrets
    ? signatureChecker({
        secrets: opts.signingSecrets,
        claim: (id, until) => store.claimMessage(id, until),
        now,
      })
    : undefined;
  const report: Report = opts.coordinatorUrl
    ? reporter({
        coordinatorUrl: opts.coordinatorUrl,
        token: opts.callbackToken,
        attempts: opts.callbackAttempts,
        fetch: opts.fetch,
        sleep: opts.sleep,
        now,
        log,
      })
    : async () => 'recorded';
  /** The work running in this process, by task. */
  const live = new Map<string, { controller: AbortController; done: Promise<void> }>();

  const reply = (task: StoredTask): TaskReply => ({
    name: opts.name,
    kf_id: task.task_id,
    task_id: task.task_id,
    release_id: task.release_id,
    state: task.state,
    progress: task.progress,
    date_submitted: task.date_submitted,
  });

  const context = (task: StoredTask, controller: AbortController, during?: TaskState): TaskContext => ({
    taskId: task.task_id,
    releaseId: task.release_id,
    studies: task.studies,
    requestId: task.request_id,
    signal: controller.signal,
    log: (line) => log(`${task.task_id} ${line}`),
    progress: async (percent) => {
      if (controller.signal.aborted) throw new TaskEndedError(`task ${task.task_id} has ended`);
      const value = Math.max(0, Math.min(100, Math.round(percent)));
      const updated = during ? await store.update(task.task_id, { progress: value }, [during]) : undefined;
      if (!updated) return end(controller, task.task_id);
      if ((await report(task.task_id, { progress: value }, task.request_id)) === 'ended')
        return end(controller, task.task_id, during);
    },
  });

  /** The coordinator says the task or its release has ended: stop the work, and say canceled here too. */
  const end = async (controller: AbortController, taskId: string, during?: TaskState): Promise<never> => {
    if (during) await store.update(taskId, { state: 'canceled' }, [during]);
    controller.abort(new TaskEndedError(`task ${taskId} has ended`));
    throw new TaskEndedError(`task ${taskId} has ended`);
  };

  /** Runs a task's work to its end state, reporting it; never throws. */
  const runWork = (task: StoredTask): Promise<void> => {
    const working = WORKING[task.state];
    if (!working || live.has(task.task_id)) return live.get(task.task_id)?.done ?? Promise.resolve();
    const controller = new AbortController();
    const during = task.state;
    const done = (async () => {
      let outcome: { state: TaskState; progress?: number };
      try {
        await work[working.phase](context(task, controller, during));
        outcome = { state: working.done, progress: 100 };
      } catch (err) {
        if (controller.signal.aborted || err instanceof TaskEndedError) return;
        log(`${task.task_id} ${working.phase} failed: ${(err as Error)?.message ?? String(err)}`);
        outcome = { state: 'failed' };
      }
      if (controller.signal.aborted) return;
      const changed = await store.update(task.task_id, outcome, [during]);
      if (!changed) return;
      const answer: CallbackOutcome = await report(task.task_id, outcome, task.request_id);
      if (answer === 'ended' && outcome.state !== 'failed')
        await store.update(task.task_id, { state: 'canceled' }, [outcome.state]);
    })()
      .catch((err) => log(`${task.task_id} work: ${String(err)}`))
      .finally(() => live.delete(task.task_id));
    live.set(task.task_id, { controller, done });
    return done;
  };

  /** Starts the work of a task that is working here or, after a restart, was working before it. */
  const ensureWork = async (task: StoredTask): Promise<StoredTask> => {
    if (!WORKING[task.state]) return task;
    if (mode === 'inline') {
      if (!live.has(task.task_id)) await runWork(task);
      return (await store.get(task.task_id)) ?? task;
    }
    void runWork(task);
    return task;
  };

  const act = async (request: ActionRequest, requestId: string | undefined): Promise<StoredTask> => {
    const action = request.action;
    if (action === 'initialize') {
      const existing = await store.get(request.task_id);
      if (existing) return existing;
      const fresh: StoredTask = {
        task_id: request.task_id,
        release_id: request.release_id,
        studies: request.studies ?? [],
        state: 'pending',
        progress: 0,
        date_submitted: new Date(now()).toISOString(),
        ...(requestId ? { request_id: requestId } : {}),
      };
      try {
        await work.initialize?.(context(fresh, new AbortController()));
      } catch (err) {
        throw new KitError('rejected', `initialize refused: ${(err as Error)?.message ?? String(err)}`);
      }
      return store.create(fresh);
    }
    let task = await store.get(request.task_id);
    if (!task) throw new KitError('not_found', `task ${request.task_id} not found`);
    if (task.release_id !== request.release_id)
      throw new KitError('invalid_input', `task ${task.task_id} belongs to release ${task.release_id}`);
    if (requestId && requestId !== task.request_id)
      task = (await store.update(task.task_id, { request_id: requestId })) ?? task;
    const rule = ACTION_RULES[action][task.state];
    if (rule === 'reject') throw new KitError('rejected', `cannot ${action} a ${task.state} task`);
    if (rule === 'same' || rule === undefined) return ensureWork(task);
    if (action === 'cancel') {
      const running = live.get(task.task_id);
      running?.controller.abort(new TaskEndedError(`task ${task.task_id} was canceled`));
      const canceled = await store.update(task.task_id, { state: 'canceled' }, [task.state]);
      if (!canceled) return (await store.get(task.task_id)) ?? task;
      if (work.cancel) {
        const controller = new AbortController();
        controller.abort();
        await Promise.resolve(work.cancel(context(canceled, controller))).catch((err) =>
          log(`${task.task_id} cancel: ${String(err)}`),
        );
      }
      return canceled;
    }
    // start (pending -> running) or publish (staged -> publishing): whoever moves the task runs its work.
    const moved = await store.update(task.task_id, { state: rule, progress: 0 }, [task.state]);
    if (!moved) return (await store.get(task.task_id)) ?? task;
    return ensureWork(moved);
  };

  const json = (
    status: number,
    body: TaskReply | ServiceStatus | ErrorReply,
    extra: Record<string, string> = {},
  ) => ({
    status,
    headers: { 'Content-Type': 'application/json', ...extra },
    body: JSON.stringify(body),
  });

  const handle = async (req: KitRequest): Promise<KitResponse> => {
    const path = req.path.replace(/\/+$/, '') || '/';
    try {
      if (path !== '/status' && path !== '/tasks') throw new KitError('not_found', `no route ${path}`);
      const allowed = path === '/status' ? 'GET' : 'POST';
      if (req.method.toUpperCase() !== allowed)
        return json(
          405,
          { message: `${path} takes ${allowed} only`, code: 'method_not_allowed' },
          { Allow: allowed },
        );
      await checkToken(req.headers.authorization);
      if (path === '/status') {
        const ready = work.status ? await work.status() : true;
        if (ready !== true)
          return json(503, {
            name: opts.name,
            message: typeof ready === 'string' ? ready : 'not ready',
            version: opts.version ?? '0.0.0',
            code: 'not_ready',
          });
        return json(200, { name: opts.name, message: 'ready for work', version: opts.version ?? '0.0.0' });
      }
      await checkSignature?.(req.body, req.headers);
      let body: unknown;
      try {
        body = JSON.parse(req.body);
      } catch {
        throw new KitError('invalid_input', 'the body is not JSON');
      }
      const parsed = ActionRequest.safeParse(body);
      if (!parsed.success) {
        const action = (body as { action?: unknown } | null)?.action;
        if (typeof action === 'string' && !(TASK_ACTIONS as readonly string[]).includes(action))
          throw new KitError('invalid_input', `unknown action ${JSON.stringify(action).slice(0, 60)}`);
        const fields = parsed.error.issues.map((i) => i.path.join('.') || 'body');
        throw new KitError('invalid_input', `missing or invalid: ${[...new Set(fields)].join(', ')}`);
      }
      const requestId = req.headers[REQUEST_ID_HEADER.toLowerCase()];
      try {
        await work.beforeAction?.(parsed.data.action, parsed.data);
      } catch (err) {
        throw new KitError(
          'rejected',
          `${parsed.data.action} refused: ${(err as Error)?.message ?? String(err)}`,
        );
      }
      const task = await act(parsed.data, requestId);
      log(`${parsed.data.action} ${task.task_id} -> ${task.state}${requestId ? ` [${requestId}]` : ''}`);
      return json(200, reply(task));
    } catch (err) {
      if (err instanceof KitError) return json(err.status, { message: err.message, code: err.code });
      // The store or the author's hook failed: unavailable for now, and the coordinator retries within its timeout.
      log(`${req.method} ${path}: ${(err as Error)?.stack ?? String(err)}`);
      return json(503, { message: 'temporarily unavailable', code: 'not_ready' }, { 'Retry-After': '1' });
    }
  };

  return {
    handle,
    store,
    idle: async () => {
      while (live.size) await Promise.all([...live.values()].map((w) => w.done));
    },
    stop: () => {
      for (const w of live.values()) w.controller.abort(new TaskEndedError('the service is stopping'));
    },
  };
}
