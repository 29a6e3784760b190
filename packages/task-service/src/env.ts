import * as z from 'zod/mini';
import type { AuthOptions } from './auth.js';
import type { CallbackOutcome } from './callbacks.js';
import { TASK_SERVICE_AUDIENCE, TASK_SERVICE_SCOPE } from './contract.js';
import { dynamoDbStore } from './dynamodb-store.js';
import type { TaskUpdate } from './engine.js';
import { fileStore } from './file-store.js';
import { functionUrlHandler } from './lambda.js';
import { type RunningServer, serve } from './node.js';
import { sqsQueue } from './queue.js';
import { checkNodeVersion, localDefaultsOnAws } from './runtime.js';
import { fileSecretSource, type SecretSource, secretsManagerSource } from './secrets.js';
import { createTaskService, type TaskService, type TaskServiceOptions, type TaskWork } from './service.js';
import { memoryStore } from './store.js';
import { clientCredentials } from './token.js';
import { workerHandler } from './worker.js';

const list = z.pipe(
  z._default(z.string(), ''),
  z.transform((s: string) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  ),
);
const url = z.url();

/**
 * Every setting of a kit service from its environment, as a zod schema, so that a service is its work plus
 * `runTaskService(work)`. The defaults fit the coordinator's local stack; the coordinator's
 * docs/task-service-authors.md lists them.
 *
 * @example
 * ```ts
 * import { ENV } from '@release-coordinator/task-service';
 *
 * const { PORT, SERVICE_NAME } = ENV.parse(process.env);
 * ```
 */
export const ENV = z.object({
  PORT: z._default(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(65535)), 4000),
  HOST: z._default(z.string(), '127.0.0.1'),
  SERVICE_NAME: z._default(z.string().check(z.minLength(1)), 'task service'),
  SERVICE_VERSION: z._default(z.string(), '1.0.0'),
  COORDINATOR_URL: z.optional(url),
  /** jwks: verify the JWT against the issuer's JWKS; verify: ask AUTH_URL/oauth/token/verify; none: no check. */
  AUTH_MODE: z._default(z.enum(['jwks', 'verify', 'none']), 'jwks'),
  AUTH_ISSUER: z._default(url, 'http://127.0.0.1:3002'),
  AUTH_JWKS_URI: z.optional(url),
  AUTH_URL: z.optional(url),
  /** Audiences the coordinator's token may carry (default task-services). */
  AUTH_AUDIENCE: list,
  /** A token without aud (Cognito access token) must carry this scope and one of AUTH_CLIENT_ID. */
  AUTH_SCOPE: z._default(z.string(), TASK_SERVICE_SCOPE),
  AUTH_CLIENT_ID: list,
  AUTH_REQUIRED_ROLE: z.optional(z.string()),
  WEBHOOK_SECRET: z.optional(z.string()),
  WEBHOOK_SECRET_FILE: z.optional(z.string()),
  /** A Secrets Manager secret (ARN or name) holding the service's secret document (SecretDocument). */
  SECRET_ID: z.optional(z.string().check(z.minLength(1))),
  CALLBACK_TOKEN: z.optional(z.string()),
  TOKEN_URL: z.optional(url),
  CLIENT_ID: z._default(z.string(), 'task-service'),
  CLIENT_SECRET: z._default(z.string(), 'task-service-local-secret'),
  TOKEN_SCOPE: z.optional(z.string()),
  /** memory, file (TASK_STORE_FILE) or dynamodb (TASK_TABLE); default: file or dynamodb when named, else memory. */
  TASK_STORE: z.optional(z.enum(['memory', 'file', 'dynamodb'])),
  TASK_STORE_FILE: z.optional(z.string()),
  TASK_TABLE: z.optional(z.string()),
  /** in-process (a Node server), worker (a work queue: SQS with WORK_QUEUE_URL, else in this process) or inline. */
  RUN_MODE: z.optional(z.enum(['in-process', 'worker', 'inline'])),
  WORK_QUEUE_URL: z.optional(url),
  /** How often the kit asks the coordinator about the tasks it gave up on (0: only at start). */
  SWEEP_SECONDS: z._default(z.coerce.number().check(z.int(), z.minimum(0)), 300),
});

/**
 * A service's settings as read from its environment: the service's options and where its server listens.
 *
 * @example
 * ```ts
 * import { type EnvSettings, settingsFromEnv } from '@release-coordinator/task-service';
 *
 * const settings: EnvSettings = settingsFromEnv({ SERVICE_NAME: 'stager', PORT: '4100' });
 * for (const note of settings.notes) console.warn(note);
 * ```
 */
export interface EnvSettings {
  /** The options of `createTaskService`. */
  options: TaskServiceOptions;
  /** Where `serve` listens (PORT, HOST). */
  listen: { port: number; host: string };
  /** How often the service asks the coordinator about the tasks it gave up on (SWEEP_SECONDS; 0: at start only). */
  sweepSeconds: number;
  /** Lines worth printing at start: what is not checked, what does not survive a restart. */
  notes: string[];
}

/**
 * Reads a service's settings from `env` (ENV). Throws an Error naming each invalid setting, and, on AWS (Lambda,
 * ECS, any AWS_EXECUTION_ENV), each setting left to a local default that would fail there (`AUTH_ISSUER`,
 * `CLIENT_ID`, `CLIENT_SECRET`, `TASK_TABLE`, and for a server `HOST`).
 *
 * @example
 * ```ts
 * import { createTaskService, serve, settingsFromEnv } from '@release-coordinator/task-service';
 *
 * const { options, listen } = settingsFromEnv();
 * const running = await serve(createTaskService(work, { ...options, log: () => {} }), listen);
 * ```
 */
export function settingsFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  opts: { server?: boolean } = {},
): EnvSettings {
  const parsed = ENV.safeParse(env);
  if (!parsed.success)
    throw new Error(
      `invalid settings: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const onAws = localDefaultsOnAws(env, { server: opts.server ?? false });
  if (onAws.length) throw new Error(`invalid settings on AWS: ${onAws.join('; ')}`);
  const e = parsed.data;
  const rules = {
    audience: e.AUTH_AUDIENCE.length ? e.AUTH_AUDIENCE : [TASK_SERVICE_AUDIENCE],
    scope: e.AUTH_SCOPE,
    clientIds: e.AUTH_CLIENT_ID,
    requiredRole: e.AUTH_REQUIRED_ROLE,
  };
  const auth: AuthOptions =
    e.AUTH_MODE === 'none'
      ? { mode: 'none' }
      : e.AUTH_MODE === 'verify'
        ? { mode: 'verify', authUrl: e.AUTH_URL ?? e.AUTH_ISSUER, ...rules }
        : { mode: 'jwks', issuer: e.AUTH_ISSUER, jwksUri: e.AUTH_JWKS_URI, ...rules };
  const notes: string[] = [];
  if (e.AUTH_MODE === 'none') notes.push('tokens are not checked (AUTH_MODE=none): for trials only');
  if (!e.WEBHOOK_SECRET && !e.WEBHOOK_SECRET_FILE && !e.SECRET_ID)
    notes.push(
      'signatures are not checked: set WEBHOOK_SECRET_FILE (or SECRET_ID, or WEBHOOK_SECRET) to where the registration wrote its secret',
    );
  const kind = e.TASK_STORE ?? (e.TASK_STORE_FILE ? 'file' : e.TASK_TABLE ? 'dynamodb' : 'memory');
  if (kind === 'file' && !e.TASK_STORE_FILE)
    throw new Error('invalid settings: TASK_STORE=file needs TASK_STORE_FILE');
  if (kind === 'dynamodb' && !e.TASK_TABLE)
    throw new Error('invalid settings: TASK_STORE=dynamodb needs TASK_TABLE');
  if (kind === 'memory')
    notes.push(
      'tasks are kept in memory: set TASK_STORE_FILE (or TASK_TABLE) so that they survive a restart',
    );
  const store =
    kind === 'file'
      ? fileStore(e.TASK_STORE_FILE as string)
      : kind === 'dynamodb'
        ? dynamoDbStore({ table: e.TASK_TABLE as string })
        : memoryStore();
  const source: SecretSource | undefined = e.SECRET_ID
    ? secretsManagerSource({ secretId: e.SECRET_ID })
    : e.WEBHOOK_SECRET_FILE
      ? fileSecretSource(e.WEBHOOK_SECRET_FILE)
      : undefined;
  // Set explicitly, the client wins; else the secret document's (a registration with create_client), else the
  // local shared client.
  const explicit = (name: 'CLIENT_ID' | 'CLIENT_SECRET') => (env[name] ? env[name] : undefined);
  const fromSource = async (field: 'clientId' | 'clientSecret') => source && (await source.read())[field];
  const callbackToken = e.CALLBACK_TOKEN
    ? async () => e.CALLBACK_TOKEN as string
    : e.TOKEN_URL
      ? clientCredentials({
          tokenUrl: e.TOKEN_URL,
          clientId: async () => explicit('CLIENT_ID') ?? (await fromSource('clientId')) ?? e.CLIENT_ID,
          clientSecret: async () =>
            explicit('CLIENT_SECRET') ?? (await fromSource('clientSecret')) ?? e.CLIENT_SECRET,
          scope: e.TOKEN_SCOPE,
        })
      : undefined;
  const secret = e.WEBHOOK_SECRET;
  return {
    options: {
      name: e.SERVICE_NAME,
      version: e.SERVICE_VERSION,
      auth,
      signingSecrets: source ? source.signingSecrets : secret ? () => [secret] : undefined,
      store,
      coordinatorUrl: e.COORDINATOR_URL,
      callbackToken,
      ...(e.RUN_MODE ? { run: e.RUN_MODE } : {}),
      ...(e.WORK_QUEUE_URL ? { queue: sqsQueue({ url: e.WORK_QUEUE_URL }) } : {}),
      log: (line) => process.stdout.write(`[${e.SERVICE_NAME}] ${line}\n`),
    },
    listen: { port: e.PORT, host: e.HOST },
    sweepSeconds: e.SWEEP_SECONDS,
    notes,
  };
}

/**
 * Runs a service as a Node server, settings from the environment (`overrides` win). SIGINT or SIGTERM, to this
 * process alone or to its whole group (Ctrl-C): stop once, free the port, exit 0.
 *
 * @example
 * ```ts
 * import { runTaskService } from '@release-coordinator/task-service';
 *
 * await runTaskService({
 *   async start(task) {
 *     await task.progress(50);
 *   },
 *   async publish() {},
 * });
 * ```
 */
export async function runTaskService(
  work: TaskWork,
  overrides: Partial<TaskServiceOptions> = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<RunningServer> {
  checkNodeVersion();
  const { options, listen, notes, sweepSeconds } = settingsFromEnv(env, { server: true });
  const merged = { ...options, ...overrides };
  const log = merged.log ?? (() => {});
  const service = createTaskService(work, merged);
  const running = await serve(service, listen);
  let timer: ReturnType<typeof setInterval> | undefined;
  let stopping = false;
  // Before anything else is awaited: a signal from now on stops the service cleanly.
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    clearInterval(timer);
    log(`${signal}: stopping`);
    running.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
  log(`listening on ${running.url} (${merged.run ?? 'in-process'})`);
  for (const note of notes) log(note);
  // Before anything resumes: the tasks the coordinator gave up on while this service was down are cleaned up.
  const sweep = () =>
    service.sweep().then(
      (r) => r.asked && log(`asked the coordinator about ${r.asked} task(s): ${r.canceled} it gave up on`),
      (err) => log(`sweep: ${String(err)}`),
    );
  await sweep();
  if (!stopping) await service.resume().catch((err) => log(`resume: ${String(err)}`));
  if (sweepSeconds > 0 && !stopping) {
    timer = setInterval(sweep, sweepSeconds * 1000);
    timer.unref();
  }
  const stop = running.stop;
  return {
    ...running,
    stop: async () => {
      clearInterval(timer);
      await stop();
    },
  };
}

/** One service per module instance, made at the first invocation (so a cold start that fails says why). */
function lazily<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => {
    made ??= make();
    return made;
  };
}

/**
 * A Lambda handler (function URL) for a service, settings from the environment. With `WORK_QUEUE_URL` (what the
 * CDK construct sets) the work goes to the worker function through SQS, and `start` and `publish` answer at once;
 * without it the work runs inline, before the answer, and must end within the coordinator's action timeout.
 *
 * @example
 * ```ts
 * import { lambdaFromEnv } from '@release-coordinator/task-service';
 *
 * export const handler = lambdaFromEnv({ start: async () => {}, publish: async () => {} });
 * ```
 */
export function lambdaFromEnv(work: TaskWork, env: NodeJS.ProcessEnv = process.env) {
  const handler = lazily(() => {
    checkNodeVersion();
    const { options } = settingsFromEnv(env);
    const run = options.run ?? (options.queue ? 'worker' : 'inline');
    if (run === 'in-process')
      throw new Error('invalid settings: RUN_MODE=in-process on Lambda, which freezes after each answer');
    if (run === 'worker' && !options.queue)
      throw new Error('invalid settings: RUN_MODE=worker on Lambda needs WORK_QUEUE_URL');
    return functionUrlHandler(createTaskService(work, { ...options, run }));
  });
  return (event: Parameters<ReturnType<typeof functionUrlHandler>>[0]) => handler()(event);
}

/**
 * The worker function of the Lambda worker mode (workerHandler), settings from the environment: the same settings
 * as the function URL's (lambdaFromEnv), with `WORK_QUEUE_URL`. Export it beside the function URL's handler:
 *
 * @example
 * ```ts
 * import { lambdaFromEnv, workerFromEnv } from '@release-coordinator/task-service';
 *
 * const work = { start: async () => {}, publish: async () => {} };
 * export const handler = lambdaFromEnv(work);
 * export const worker = workerFromEnv(work);
 * ```
 */
export function workerFromEnv(work: TaskWork, env: NodeJS.ProcessEnv = process.env) {
  const worker = lazily(() => {
    checkNodeVersion();
    const { options } = settingsFromEnv(env);
    if (!options.queue) throw new Error('invalid settings: the worker needs WORK_QUEUE_URL');
    return workerHandler(createTaskService(work, { ...options, run: 'worker' }), options.queue);
  });
  return (...args: Parameters<ReturnType<typeof workerHandler>>) => worker()(...args);
}

const reporters = new Map<NodeJS.ProcessEnv, TaskService>();

/**
 * For an outside job (a Batch job, a Step Functions task, a script) that `start` or `publish` handed its work to
 * (`task.handOff()`): reports progress, a checkpoint, or the end of the work (`staged` or `published`, or `failed`)
 * through the service's own task store and to the coordinator, with the same settings as the service (`TASK_TABLE`
 * or `TASK_STORE_FILE`, `COORDINATOR_URL`, `TOKEN_URL` and its client, `SECRET_ID`). Answers `ended` when the task or
 * its release has ended: stop, the service cleans up (its next sweep runs its `cancel()`).
 *
 * @example
 * ```ts
 * import { reportTask } from '@release-coordinator/task-service';
 *
 * const taskId = process.env.TASK_ID ?? '';
 * if ((await reportTask(taskId, { progress: 50 })) === 'ended') process.exit(0);
 * await reportTask(taskId, { state: 'staged' });
 * ```
 */
export async function reportTask(
  taskId: string,
  update: TaskUpdate,
  env: NodeJS.ProcessEnv = process.env,
): Promise<CallbackOutcome> {
  let service = reporters.get(env);
  if (!service) {
    const { options } = settingsFromEnv(env);
    const none = async () => {
      throw new Error('reportTask runs no work');
    };
    service = createTaskService({ start: none, publish: none }, { ...options, cleanupElsewhere: true });
    reporters.set(env, service);
  }
  return service.reportTask(taskId, update);
}
