import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { AuthSettings } from './auth.js';
import type { Settings } from './settings.js';
import { TABLES, type TableKey } from './table-definitions.js';

export interface CommonEnvInputs {
  settings: Settings;
  tables: Record<TableKey, ITable>;
  filesBucket: IBucket;
  auth: AuthSettings;
}

/**
 * The environment every function gets, parsed by each one at cold start with zod (functions/shared/config.ts):
 * physical table names, how to verify tokens, the files bucket and the orchestration settings. All table names are
 * given to every function so configuration parsing never depends on grants; access is decided by IAM alone.
 */
export function commonEnvironment({
  settings,
  tables,
  filesBucket,
  auth,
}: CommonEnvInputs): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, def] of Object.entries(TABLES) as [TableKey, { envVar: string }][]) {
    env[def.envVar] = tables[key].tableName;
  }
  return {
    ...env,
    AUTH_ISSUER: auth.issuer,
    AUTH_AUDIENCE: auth.audience.join(','),
    AUTH_JWKS_URI: auth.jwksUri,
    // The scope by which PATCH /tasks/{id} and POST /events take the token of a task service's own Cognito client
    // (functions/shared/auth.ts, verifyServiceClient); with an external issuer no such client exists: off.
    TASK_SERVICE_CLIENTS_SCOPE: auth.serviceClients?.scope ?? '',
    ...auth.env,
    FILES_BUCKET: filesBucket.bucketName,
    POLL_SECONDS: String(settings.pollSeconds),
    ACTION_TIMEOUT_SECONDS: String(settings.actionTimeoutSeconds),
    ACTION_CONCURRENCY: String(settings.actionConcurrency),
    MAX_PHASE_SECONDS: String(settings.maxPhaseSeconds),
    HEALTH_FAILURES: String(settings.healthFailures),
    // Unset only in a synth that cannot be deployed (lib/deploy-checks.ts); the study sync then fails, naming it.
    ...(settings.studiesSource ? { STUDIES_SOURCE: settings.studiesSource } : {}),
    METRICS_NAMESPACE: settings.metricsNamespace,
    // The reconciler deletes the events older than this; 0 keeps them for ever (docs/operations.md, Audit).
    EVENT_RETENTION_DAYS: String(settings.eventRetentionDays),
    ...settings.functionEnv,
  };
}

/**
 * The registry of task services on AWS: every service must be bound to the OAuth client that acts for it
 * (TASK_SERVICE_CLIENT_REQUIRED, overridable with functionEnv).
 */
export function registryEnvironment(): Record<string, string> {
  return { TASK_SERVICE_CLIENT_REQUIRED: 'true' };
}

/** The service-client gate's pool: with Cognito, where it makes the task services' app clients. */
export function serviceClientEnvironment(auth: AuthSettings): Record<string, string> {
  return auth.serviceClients ? { TASK_SERVICE_CLIENTS_USER_POOL_ID: auth.serviceClients.userPoolId } : {};
}

/** The coordinator's own client credentials, for calls to task services. */
export function coordinatorTokenEnvironment(auth: AuthSettings): Record<string, string> {
  const env: Record<string, string> = {};
  if (auth.tokenUrl) env.COORDINATOR_TOKEN_URL = auth.tokenUrl;
  if (auth.clientId) env.COORDINATOR_CLIENT_ID = auth.clientId;
  if (auth.clientSecret) env.COORDINATOR_CLIENT_SECRET_ARN = auth.clientSecret.secretArn;
  if (auth.tokenScope) env.COORDINATOR_TOKEN_SCOPE = auth.tokenScope;
  return env;
}
