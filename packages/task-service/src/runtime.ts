/**
 * The oldest Node.js major version the kit runs on (its package.json `engines` says the same); `runTaskService`,
 * `lambdaFromEnv` and `workerFromEnv` refuse to start on an older one.
 *
 * @example
 * ```ts
 * import { MIN_NODE_MAJOR } from '@release-coordinator/task-service';
 *
 * console.log(`this service needs Node.js ${MIN_NODE_MAJOR} or later`);
 * ```
 */
export const MIN_NODE_MAJOR = 20;

/**
 * Throws, naming both versions, when `version` (default: this process's) is older than MIN_NODE_MAJOR.
 *
 * @example
 * ```ts
 * import { checkNodeVersion } from '@release-coordinator/task-service';
 *
 * checkNodeVersion(); // passes on Node.js 20 and later
 * checkNodeVersion('18.20.4'); // throws: the kit needs Node.js 20 or later
 * ```
 */
export function checkNodeVersion(version: string = process.versions.node): void {
  const major = Number(version.replace(/^v/, '').split('.')[0]);
  if (!(major >= MIN_NODE_MAJOR))
    throw new Error(
      `the task-service kit needs Node.js ${MIN_NODE_MAJOR} or later; this process runs Node.js ${version}`,
    );
}

/** Where on AWS this process runs, from the variables AWS sets; undefined anywhere else. */
export function awsPlatform(env: NodeJS.ProcessEnv): string | undefined {
  if (env.AWS_LAMBDA_FUNCTION_NAME) return 'Lambda';
  if (env.ECS_CONTAINER_METADATA_URI_V4 || env.ECS_CONTAINER_METADATA_URI) return 'ECS';
  if (env.AWS_EXECUTION_ENV) return env.AWS_EXECUTION_ENV;
  return undefined;
}

/** The settings read for the check below: as given (undefined: unset, so its local default applies). */
interface Given {
  AUTH_MODE?: string;
  AUTH_ISSUER?: string;
  AUTH_CLIENT_ID?: string;
  AUTH_AUDIENCE?: string;
  TOKEN_URL?: string;
  CLIENT_ID?: string;
  CLIENT_SECRET?: string;
  CALLBACK_TOKEN?: string;
  SECRET_ID?: string;
  WEBHOOK_SECRET?: string;
  WEBHOOK_SECRET_FILE?: string;
  TASK_STORE?: string;
  TASK_STORE_FILE?: string;
  TASK_TABLE?: string;
  HOST?: string;
}

/**
 * The settings whose local defaults (fit for `npm start` on one machine) would make a service on AWS fail at run
 * time, one line each naming the setting and what to set it to (docs/task-service-aws.md). Empty off AWS.
 */
export function localDefaultsOnAws(env: NodeJS.ProcessEnv, opts: { server: boolean }): string[] {
  const platform = awsPlatform(env);
  if (!platform) return [];
  const e = env as Given;
  const problems: string[] = [];
  if (e.AUTH_MODE !== 'none' && !e.AUTH_ISSUER)
    problems.push(
      'AUTH_ISSUER is unset, and its default http://127.0.0.1:3002 is the local identity provider: set it to the coordinator’s issuer (stack output Issuer)',
    );
  if (
    e.AUTH_MODE !== 'none' &&
    /cognito-idp\./.test(e.AUTH_ISSUER ?? '') &&
    !e.AUTH_CLIENT_ID &&
    !e.AUTH_AUDIENCE
  )
    problems.push(
      'AUTH_CLIENT_ID is unset: a Cognito token has no aud, and the coordinator’s is told by its client id (stack output CoordinatorClientId)',
    );
  const credentialsFromSecret = Boolean(e.SECRET_ID || e.WEBHOOK_SECRET_FILE);
  if (e.TOKEN_URL && !e.CALLBACK_TOKEN && !credentialsFromSecret) {
    if (!e.CLIENT_ID)
      problems.push(
        'CLIENT_ID is unset, and its default task-service is the local shared client: set the client_id the registration answered, or SECRET_ID',
      );
    if (!e.CLIENT_SECRET)
      problems.push(
        'CLIENT_SECRET is unset, and its default is the local shared client’s secret: set the client_secret the registration answered, or SECRET_ID',
      );
  }
  const store = e.TASK_STORE ?? (e.TASK_STORE_FILE ? 'file' : e.TASK_TABLE ? 'dynamodb' : 'memory');
  if (store === 'memory')
    problems.push(
      'TASK_TABLE is unset, so tasks would be kept in memory and lost with the instance: set TASK_TABLE (the construct’s TaskTableName output)',
    );
  if (opts.server && platform !== 'Lambda' && !e.HOST)
    problems.push(
      'HOST is unset, and its default 127.0.0.1 is unreachable from outside the container: set HOST=0.0.0.0',
    );
  return problems.map((p) => `${p} (running on AWS: ${platform})`);
}
