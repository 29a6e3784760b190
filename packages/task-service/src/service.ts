import { type AuthOptions, tokenChecker } from './auth.js';
import { type CallbackOutcome, type Report, reporter } from './callbacks.js';
import type { TaskContext } from './context.js';
import {
  ACTION_RULES,
  ActionRequest,
  type ErrorReply,
  REQUEST_ID_HEADER,
  type ServiceStatus,
  TASK_ACTIONS,
  type TaskAction,
  type TaskReply,
} from './contract.js';
import { createEngine, type RunMode, type TaskUpdate } from './engine.js';
import { KitError } from './errors.js';
import { type JobOutcome, localQueue, type WorkJob, type WorkQueue } from './queue.js';
import type { Secrets } from './secrets.js';
import { signatureChecker } from './signature.js';
import { memoryStore, type StoredTask, type TaskStore } from './store.js';
import { coordinatorTaskState } from './sweep.js';
import type { TokenSource } from './token.js';

export type { TaskContext } from './context.js';
export type { RunMode, TaskUpdate } from './engine.js';

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
  /**
   * The staging, begun after `start` is answered `running`. Resolving makes the task `staged`, throwing `failed`;
   * answering `task.handOff()` (a HandedOff) leaves it `running` for an outside job, which reports with
   * `reportTask`. Any other answer is ignored.
   */
  start(task: TaskContext): unknown;
  /**
   * The publishing, as `start`: resolving makes the task `published`, throwing `failed`; answering
   * `task.handOff()` leaves it `publishing` for an outside job.
   */
  publish(task: TaskContext): unknown;
  /**
   * The clean-up of a canceled task (its signal is already aborted): discard the staged work. Called once per
   * cancel, after the answer (the coordinator never waits for it), with `task.state` the state the task was canceled
   * in; also for a cancel of a `published` task (undo the publication if you can; the task stays published), and for
   * a task the coordinator gave up on while the service was down. Make it safe to run twice.
   */
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
   * Where the work of `start` and `publish` runs (docs/task-service-authors.md, "Three ways to run"):
   * `in-process` (the default: a Node server or container) answers `running` at once and runs the work here;
   * `worker` answers at once and sends the work to `queue` (SQS on AWS, where an SQS-triggered worker runs it;
   * by default a queue in this process); `inline` runs the work before answering, for work that ends within the
   * coordinator's action timeout on a Lambda function without a worker. `get_status` never runs work.
   */
  run?: RunMode;
  /** The work queue of the worker mode (default: `localQueue()`, in this process). */
  queue?: WorkQueue;
  /**
   * How often running work re-reads its task, and stops when another instance canceled it (default 5 s; 0: never).
   */
  watchSeconds?: number;
  /**
   * For a process that only reports (an outside job's `reportTask`): a task that ends while it reports is marked for
   * clean-up, which the service's own sweep runs, instead of running `cancel()` here.
   */
  cleanupElsewhere?: boolean;
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
  /**
   * An outside job's report on the work `start` or `publish` handed to it: progress, a checkpoint, or its end
   * (`staged` or `published`, or `failed`), recorded in the store and sent to the coordinator. The answer says
   * whether to go on: `ended` when the task or its release has ended (stop, and discard the work).
   */
  reportTask(taskId: string, update: TaskUpdate): Promise<CallbackOutcome>;
  /** Runs one job of the worker mode (the Lambda worker, or the local queue, calls it). */
  runJob(job: WorkJob, opts?: { stopAt?: number }): Promise<JobOutcome>;
  /** Asks the coordinator about the tasks still at work or staged here, and cancels those it gave up on. */
  sweep(): Promise<{ asked: number; canceled: number }>;
  /** After a restart: runs again the work that was going on (attempt + 1), and the clean-ups left. */
  resume(): Promise<number>;
  /** Resolves when no work is running (tests; a graceful stop). */
  idle(): Promise<void>;
  /** Aborts all running work (the tasks keep their state; a restart picks them up again). */
  stop(): void;
}

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
  const mode = opts.run ?? 'in-process';
  const queue = mode === 'worker' ? (opts.queue ?? localQueue({ log })) : undefined;
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
  const engine = createEngine({
    work,
    store,
    report,
    log,
    now,
    mode,
    queue,
    watchMs: (opts.watchSeconds ?? 5) * 1000,
    cleanupElsewhere: opts.cleanupElsewhere,
    ask: opts.coordinatorUrl
      ? coordinatorTaskState({
          coordinatorUrl: opts.coordinatorUrl,
          token: opts.callbackToken,
          fetch: opts.fetch,
          log,
        })
      : undefined,
  });
  queue?.attach?.((job) => engine.runJob(job));

  const reply = (task: StoredTask): TaskReply => ({
    name: opts.name,
    kf_id: task.task_id,
    task_id: task.task_id,
    release_id: task.release_id,
    state: task.state,
    progress: task.progress,
    date_submitted: task.date_submitted,
  });

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
        await work.initialize?.(engine.context(fresh, new AbortController(), 'pending'));
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
    if (action === 'cancel' && task.state === 'published') return engine.cancelPublished(task);
    const rule = ACTION_RULES[action][task.state];
    if (rule === 'reject') throw new KitError('rejected', `cannot ${action} a ${task.state} task`);
    // A repeat answers the task as it is: get_status only ever reads the store.
    if (rule === 'same' || rule === undefined) return task;
    if (action === 'cancel')
      return (await engine.cancelHere(task)) ?? (await store.get(task.task_id)) ?? task;
    // start (pending -> running) or publish (staged -> publishing): whoever moves the task hands its work on.
    // Copied: the memory store changes its task objects in place.
    const before = { state: task.state, progress: task.progress };
    const moved = await store.update(
      task.task_id,
      { state: rule, progress: 0, attempt: 0, checkpoint: null, handed_off: false },
      [task.state],
    );
    if (!moved) return (await store.get(task.task_id)) ?? task;
    try {
      await engine.dispatch(moved);
    } catch (err) {
      // The work could not be handed on (the queue is unavailable): as if the action never came, and a 503.
      await store.update(task.task_id, before, [rule]);
      throw err;
    }
    return mode === 'inline' ? ((await store.get(task.task_id)) ?? moved) : moved;
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
    reportTask: engine.reportTask,
    runJob: engine.runJob,
    sweep: engine.sweep,
    resume: engine.resume,
    idle: async () => {
      await engine.idle();
      await queue?.idle?.();
      await engine.idle();
    },
    stop: () => {
      queue?.stop?.();
      engine.stop();
    },
  };
}
