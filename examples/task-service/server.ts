import { z } from 'zod';
import {
  type Action,
  clientCredentials,
  secretFile,
  startTaskService,
  type TaskServiceOptions,
} from './service.js';

/**
 * Runs the reference task service: `npm run task-service`. Every setting is an environment variable (see
 * examples/task-service/README.md); the defaults fit the local stack (`npm start`).
 */
const list = z
  .string()
  .default('')
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  );

const env = z
  .object({
    PORT: z.coerce.number().int().min(0).max(65535).default(4000),
    HOST: z.string().default('127.0.0.1'),
    SERVICE_NAME: z.string().default('reference task service'),
    COORDINATOR_URL: z.string().url().optional(),
    /** jwks (default): aws-jwt-verify against AUTH_ISSUER's JWKS; verify: ask AUTH_URL/oauth/token/verify; none. */
    AUTH_MODE: z.enum(['jwks', 'verify', 'none']).default('jwks'),
    AUTH_ISSUER: z.string().url().default('http://127.0.0.1:3002'),
    /** The coordinator's token is issued for the task services' audience (never the coordinator API's). */
    AUTH_AUDIENCE: z
      .string()
      .default('task-services')
      .transform((s) =>
        s
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean),
      ),
    AUTH_JWKS_URI: z.string().url().optional(),
    AUTH_URL: z.string().url().optional(),
    /** A role the coordinator's token must carry, e.g. service. */
    AUTH_REQUIRED_ROLE: z.string().optional(),
    /** The signing secret the registration answered (`whsec_…`); actions must then be signed with it. */
    WEBHOOK_SECRET: z.string().optional(),
    /** A file holding it (or the registration's JSON answer), read again when it changes; no restart needed. */
    WEBHOOK_SECRET_FILE: z.string().optional(),
    /** Callback token: a fixed one, or client credentials at TOKEN_URL. */
    CALLBACK_TOKEN: z.string().optional(),
    TOKEN_URL: z.string().url().optional(),
    CLIENT_ID: z.string().default('task-service'),
    CLIENT_SECRET: z.string().default('task-service-local-secret'),
    STAGE_SECONDS: z.coerce.number().min(0).default(5),
    PUBLISH_SECONDS: z.coerce.number().min(0).default(2),
    PROGRESS_STEPS: z.coerce.number().int().min(1).default(4),
    /** Failure injection: actions answered 503, plus "staging" / "publishing" for work that fails. */
    FAIL_AT: list,
  })
  .parse(process.env);

const auth: TaskServiceOptions['auth'] =
  env.AUTH_MODE === 'none'
    ? { mode: 'none' }
    : env.AUTH_MODE === 'verify'
      ? { mode: 'verify', authUrl: env.AUTH_URL ?? env.AUTH_ISSUER, audience: env.AUTH_AUDIENCE }
      : {
          mode: 'jwks',
          issuer: env.AUTH_ISSUER,
          audience: env.AUTH_AUDIENCE,
          jwksUri: env.AUTH_JWKS_URI,
          requiredRole: env.AUTH_REQUIRED_ROLE,
        };

const callbackToken = env.CALLBACK_TOKEN
  ? async () => env.CALLBACK_TOKEN as string
  : env.TOKEN_URL
    ? clientCredentials(env.TOKEN_URL, env.CLIENT_ID, env.CLIENT_SECRET)
    : undefined;

const service = await startTaskService(
  {
    name: env.SERVICE_NAME,
    coordinatorUrl: env.COORDINATOR_URL,
    callbackToken,
    auth,
    signingSecrets: env.WEBHOOK_SECRET_FILE
      ? secretFile(env.WEBHOOK_SECRET_FILE)
      : env.WEBHOOK_SECRET
        ? () => [env.WEBHOOK_SECRET as string]
        : undefined,
    stageSeconds: env.STAGE_SECONDS,
    publishSeconds: env.PUBLISH_SECONDS,
    progressSteps: env.PROGRESS_STEPS,
    failAt: env.FAIL_AT as (Action | 'staging' | 'publishing')[],
    log: (line) => process.stdout.write(`[${env.SERVICE_NAME}] ${line}\n`),
  },
  { port: env.PORT, host: env.HOST },
);
process.stdout.write(`[${env.SERVICE_NAME}] listening on ${service.url}\n`);
if (!env.WEBHOOK_SECRET && !env.WEBHOOK_SECRET_FILE)
  process.stdout.write(
    `[${env.SERVICE_NAME}] signatures are not checked: set WEBHOOK_SECRET or WEBHOOK_SECRET_FILE to the secret the registration answered\n`,
  );

// SIGINT or SIGTERM, to this process alone (a supervisor, a script) or to its whole group (Ctrl-C, which also reaches
// npm, which passes it on again): stop once, free the port, exit 0.
let stopping = false;
const shutdown = (signal: NodeJS.Signals) => {
  if (stopping) return;
  stopping = true;
  process.stdout.write(`[${env.SERVICE_NAME}] ${signal}: stopping\n`);
  service.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
