import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';

/**
 * Structured JSON logs through the Powertools logger: CloudWatch on Lambda, the terminal locally (the local stack runs
 * the same handlers, so it prints the same lines). Every line carries `service`, `level`, `timestamp` and the keys of
 * the work it belongs to: `function_request_id` (the Lambda request id), `correlation_id` (from the caller's
 * X-Request-Id, or generated), and `release_id`, `task_id`, `task_service_id` where they apply.
 *
 * Those keys live in an AsyncLocalStorage context per invocation rather than in the logger's own appended keys: the
 * local stack (and a Lambda managed instance) runs many invocations at once in one process, and a key appended to
 * the shared logger would bleed into the lines of every other request. `withLogContext` starts a context (httpApp and
 * the orchestration handlers do), `appendLogKeys` adds to it once an id is known.
 *
 * The level comes from LOG_LEVEL (debug, info, warn, error; default info), or Powertools' own POWERTOOLS_LOG_LEVEL.
 */
const LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
type Level = (typeof LEVELS)[number];
const configured = (process.env.LOG_LEVEL ?? process.env.POWERTOOLS_LOG_LEVEL ?? 'info').toUpperCase();

export const logger = new Logger({
  serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'release-coordinator',
  logLevel: (LEVELS as readonly string[]).includes(configured) ? (configured as Level) : 'INFO',
});

/** The ids a line may carry (snake_case, as Powertools names its own keys). */
export interface LogKeys {
  function_request_id?: string;
  correlation_id?: string;
  release_id?: string;
  task_id?: string;
  task_service_id?: string;
  /** The caller of an HTTP request: its token's subject, and its client id where the token has one. */
  actor?: string | null;
  actor_client_id?: string | null;
  [key: string]: unknown;
}

const scope = new AsyncLocalStorage<LogKeys>();

/** Runs `fn` with its own log context: the current keys (if any) plus `keys`. */
export function withLogContext<T>(keys: LogKeys, fn: () => T): T {
  return scope.run({ ...scope.getStore(), ...defined(keys) }, fn);
}

/**
 * Runs one Lambda invocation's work in a fresh context: its request id, and a correlation id (the one in `keys`, or a
 * new one), plus any other keys.
 */
export function inInvocation<T>(
  context: { awsRequestId?: string } | undefined,
  keys: LogKeys,
  fn: () => T,
): T {
  const correlation_id = keys.correlation_id ?? randomUUID();
  return withLogContext({ ...keys, function_request_id: context?.awsRequestId, correlation_id }, fn);
}

/** Adds keys to the current context (no-op outside one): every later line of this invocation carries them. */
export function appendLogKeys(keys: LogKeys): void {
  const store = scope.getStore();
  if (store) Object.assign(store, defined(keys));
}

/** The current context's keys (the correlation id to pass on, for one). */
export function logKeys(): Readonly<LogKeys> {
  return scope.getStore() ?? {};
}

const defined = (keys: LogKeys) =>
  Object.fromEntries(Object.entries(keys).filter(([, v]) => v !== undefined && v !== null));

type Data = Record<string, unknown>;
export const log = {
  debug: (m: string, d?: Data) => logger.debug(m, { ...scope.getStore(), ...d }),
  info: (m: string, d?: Data) => logger.info(m, { ...scope.getStore(), ...d }),
  warn: (m: string, d?: Data) => logger.warn(m, { ...scope.getStore(), ...d }),
  error: (m: string, d?: Data) => logger.error(m, { ...scope.getStore(), ...d }),
};
