import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { parseEnv } from '#functions/shared/config.js';
import { HANDLER_SOURCES } from './handlers.js';

/** The repository root, whatever the working directory of `npm start` is. */
export const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
const seconds = (fallback: number) => z.coerce.number().positive().default(fallback);

/**
 * Every setting of the local stack, read once from the environment (each has a default; the README's configuration
 * table lists them). Settings that the functions themselves read (AUTH_ROLES_CLAIMS, POLL_SECONDS, ...) pass
 * through the environment untouched.
 */
export const localEnv = z.object({
  /** 127.0.0.1 by default; 0.0.0.0 serves every interface. */
  HOST: z.string().min(1).default('127.0.0.1'),
  COORDINATOR_PORT: port(3000),
  FILES_PORT: port(3001),
  IDP_PORT: port(3002),
  S3_PORT: port(3003),
  SFN_PORT: port(3004),
  /** The dashboard (ui/, built by Vite and served by local/ui-server.ts). */
  UI_PORT: port(3005),
  /**
   * The dashboard's URL as browsers reach it, when that is not http://<HOST>:<UI_PORT> (a proxy, another name).
   * Its origin is allowed by CORS and as a sign-in redirect.
   */
  UI_PUBLIC_URL: z.string().url().optional(),
  DYNAMODB_PORT: port(8000),
  /**
   * Where the conflict-faithful DynamoDB proxy listens when DYNAMODB_FAITHFUL is set (local/dynamodb-faithful.ts):
   * 0, any free port. `GET /faithful` on it counts what it refused.
   */
  DYNAMODB_PROXY_PORT: port(0),
  DATA_DIR: z.string().min(1).default('.local'),
  /**
   * Where the functions' CloudWatch metric lines (EMF) go instead of the stack's log: <DATA_DIR>/metrics.log by
   * default. At LOG_LEVEL=debug they are printed as well (local/metrics-file.ts).
   */
  LOCAL_METRICS_FILE: z.string().min(1).optional(),
  /**
   * source: the handlers' TypeScript modules; bundled: the minified bundles that deploy, built at start-up into
   * dist/functions (or LOCAL_BUNDLES_DIR) by the same esbuild call as CDK (local/handlers.ts, lib/bundling.ts).
   */
  LOCAL_HANDLERS: z.enum(HANDLER_SOURCES).default('source'),
  /** JVM heap of DynamoDB Local (docs/local-emulators.md: 256m holds it near 350 MB RSS at full throughput). */
  DYNAMODB_HEAP: z
    .string()
    .regex(/^\d+[kmg]$/i, 'a JVM size such as 256m')
    .default('256m'),
  /** Physical tables are <TABLE_PREFIX>-Coordinator, -Studies and -Files. */
  TABLE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,100}$/, 'letters, digits, _ . -')
    .default('local'),
  STUDIES_SOURCE: z.string().min(1).default(resolve(ROOT, 'local/studies.sample.json')),
  HEALTH_INTERVAL_SECONDS: seconds(60),
  /** Interval of the reconciler, which also runs once right after start-up (functions/orchestration/reconcile.ts). */
  RECONCILE_SECONDS: seconds(60),
  STUDY_SYNC_SECONDS: seconds(3600),
  /**
   * Closed executions the local Step Functions endpoint keeps for DescribeExecution / GetExecutionHistory (the
   * oldest go first). A bounded cache: the soak benchmark lowers it so the cache is full before it measures memory.
   */
  SFN_KEEP_CLOSED: z.coerce.number().int().min(1).default(2000),
  /** Until the first study sync succeeds, it is retried this often (and /health answers 503). */
  STUDY_SYNC_RETRY_SECONDS: seconds(5),
  /** Issuer written into tokens; defaults to http://127.0.0.1:<IDP_PORT>. */
  IDP_ISSUER: z.string().url().optional(),
  AUTH_AUDIENCE: z.string().min(1).default('release-coordinator'),
  /** JSON array of {client_id, client_secret, roles?, groups?}; see DEFAULT_CLIENTS in local/idp/clients.ts. */
  IDP_CLIENTS: z.string().optional(),
  IDP_TOKEN_TTL_SECONDS: z.coerce.number().int().positive().default(3600),
  /** Unset: POST /dev/tokens only while the identity provider listens on loopback; true/false: always/never. */
  IDP_DEV_TOKENS: z
    .enum(['true', 'false', '1', '0'])
    .optional()
    .transform((v) => (v === undefined ? undefined : v === 'true' || v === '1')),
  /** `aud` of the coordinator's own token (its calls to task services); never accepted by the coordinator's APIs. */
  TASK_SERVICE_AUDIENCE: z.string().min(1).default('task-services'),
  /** The IdP client the coordinator uses for its own calls to task services. */
  COORDINATOR_CLIENT_ID: z.string().min(1).default('coordinator'),
  ADMIN_TOKEN_TTL_SECONDS: z.coerce.number().int().positive().default(86_400),
});
/** The settings, with the paths made absolute and the metrics file defaulted into DATA_DIR. */
export type LocalConfig = z.infer<typeof localEnv> & { LOCAL_METRICS_FILE: string };

export function parseLocalConfig(env: NodeJS.ProcessEnv = process.env): LocalConfig {
  const config = parseEnv(localEnv, env);
  return {
    ...config,
    DATA_DIR: resolve(config.DATA_DIR),
    LOCAL_METRICS_FILE: resolve(config.LOCAL_METRICS_FILE ?? join(config.DATA_DIR, 'metrics.log')),
    // A file source is made absolute, so handlers resolve it the same way whatever their working directory.
    STUDIES_SOURCE: /^https?:\/\//.test(config.STUDIES_SOURCE)
      ? config.STUDIES_SOURCE
      : resolve(config.STUDIES_SOURCE),
  };
}

/** The host to put in printed URLs: a wildcard bind address is reached through loopback. */
export function publicHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}
