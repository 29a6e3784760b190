import * as z from 'zod/mini';
import type { AuthOptions } from './auth.js';
import { TASK_SERVICE_AUDIENCE, TASK_SERVICE_SCOPE } from './contract.js';
import { dynamoDbStore } from './dynamodb-store.js';
import { fileStore } from './file-store.js';
import { functionUrlHandler } from './lambda.js';
import { type RunningServer, serve } from './node.js';
import { createTaskService, type TaskServiceOptions, type TaskWork } from './service.js';
import { secretFile } from './signature.js';
import { memoryStore } from './store.js';
import { clientCredentials } from './token.js';

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
  CALLBACK_TOKEN: z.optional(z.string()),
  TOKEN_URL: z.optional(url),
  CLIENT_ID: z._default(z.string(), 'task-service'),
  CLIENT_SECRET: z._default(z.string(), 'task-service-local-secret'),
  TOKEN_SCOPE: z.optional(z.string()),
  /** memory, file (TASK_STORE_FILE) or dynamodb (TASK_TABLE); default: file or dynamodb when named, else memory. */
  TASK_STORE: z.optional(z.enum(['memory', 'file', 'dynamodb'])),
  TASK_STORE_FILE: z.optional(z.string()),
  TASK_TABLE: z.optional(z.string()),
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
  /** Lines worth printing at start: what is not checked, what does not survive a restart. */
  notes: string[];
}

/**
 * Reads a service's settings from `env` (ENV). Throws an Error naming each invalid setting.
 *
 * @example
 * ```ts
 * import { createTaskService, serve, settingsFromEnv } from '@release-coordinator/task-service';
 *
 * const { options, listen } = settingsFromEnv();
 * const running = await serve(createTaskService(work, { ...options, log: () => {} }), listen);
 * ```
 */
export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): EnvSettings {
  const parsed = ENV.safeParse(env);
  if (!parsed.success)
    throw new Error(
      `invalid settings: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
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
  if (!e.WEBHOOK_SECRET && !e.WEBHOOK_SECRET_FILE)
    notes.push(
      'signatures are not checked: set WEBHOOK_SECRET or WEBHOOK_SECRET_FILE to the secret the registration answered',
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
  const callbackToken = e.CALLBACK_TOKEN
    ? async () => e.CALLBACK_TOKEN as string
    : e.TOKEN_URL
      ? clientCredentials({
          tokenUrl: e.TOKEN_URL,
          clientId: e.CLIENT_ID,
          clientSecret: e.CLIENT_SECRET,
          scope: e.TOKEN_SCOPE,
        })
      : undefined;
  const secret = e.WEBHOOK_SECRET;
  return {
    options: {
      name: e.SERVICE_NAME,
      version: e.SERVICE_VERSION,
      auth,
      signingSecrets: e.WEBHOOK_SECRET_FILE
        ? secretFile(e.WEBHOOK_SECRET_FILE)
        : secret
          ? () => [secret]
          : undefined,
      store,
      coordinatorUrl: e.COORDINATOR_URL,
      callbackToken,
      log: (line) => process.stdout.write(`[${e.SERVICE_NAME}] ${line}\n`),
    },
    listen: { port: e.PORT, host: e.HOST },
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
  const { options, listen, notes } = settingsFromEnv(env);
  const merged = { ...options, ...overrides };
  const log = merged.log ?? (() => {});
  const running = await serve(createTaskService(work, merged), listen);
  log(`listening on ${running.url}`);
  for (const note of notes) log(note);
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping`);
    running.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
  return running;
}

/**
 * A Lambda handler (function URL) for a service, settings from the environment; the work runs inline.
 *
 * @example
 * ```ts
 * import { lambdaFromEnv } from '@release-coordinator/task-service';
 *
 * export const handler = lambdaFromEnv({ start: async () => {}, publish: async () => {} });
 * ```
 */
export function lambdaFromEnv(work: TaskWork, env: NodeJS.ProcessEnv = process.env) {
  const { options } = settingsFromEnv(env);
  return functionUrlHandler(createTaskService(work, { ...options, run: 'inline' }));
}
