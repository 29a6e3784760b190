/**
 * `npm start`: the whole system on one machine, with no AWS account and no Docker.
 *
 *   DynamoDB Local (Java)  ->  the identity provider  ->  s3rver  ->  Step Functions endpoint
 *   ->  the coordinator API and the files API (local/http-server.ts calling the Lambda handler modules)
 *   ->  the first study sync  ->  ready: GET /health answers 200, URLs and an admin token are printed.
 *   The dashboard (ui/) is built meanwhile if its sources changed, and served on UI_PORT from the start.
 *
 * The stack is a composition of components. A component (local/component.ts) is
 *
 *   { name: string; env: Record<string, string>; urls?: Record<string, string>; stop(): Promise<void> }
 *
 * Start it, then `stack.use(component)` (local/startup/stack.ts): its `env` (endpoints, table names, issuer, ...) is
 * merged into process.env, and it is stopped in reverse order on Ctrl-C or SIGTERM. Everything that imports handler
 * modules comes after the components whose env they need, because handlers parse their config once, at module load.
 * Adding a component is a few lines in main() (the longer start-ups live in local/startup/). Every component is
 * imported statically and every scheduled function is loaded by its manifest entry, so a mistyped path fails the
 * start (or tsc) instead of silently leaving a part out.
 *
 * Every setting is an environment variable with a default (local/config.ts; the README's configuration table).
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { log } from '#functions/shared/log.js';
import { type ApiFunction, COORDINATOR_API, FILES_API } from '#lib/api-manifest.js';
import { COORDINATOR_INVOKED_WORKERS, FILES_WORKERS } from '#lib/orchestration-manifest.js';
import { loadHandler } from '#local/component.js';
import { parseLocalConfig } from '#local/config.js';
import { tableEnv } from '#local/dynamodb-local.js';
import { createLocalApi } from '#local/http-server.js';
import { startLocalLambda } from '#local/lambda.js';
import { meter, metered, meteredEventSink } from '#local/meter/meter.js';
import { routeMetricLines } from '#local/metrics-file.js';
import { Readiness } from '#local/readiness.js';
import { startS3 } from '#local/s3.js';
import { banner, buildBundles } from '#local/startup/banner.js';
import { startDashboard } from '#local/startup/dashboard.js';
import { claimDataDir, shown } from '#local/startup/data-dir.js';
import { startDynamoDb } from '#local/startup/dynamodb.js';
import { stackClients, startIdentityProvider } from '#local/startup/identity.js';
import { assertPortFree, LocalStack } from '#local/startup/stack.js';
import { firstStudySync, startWorkerSchedules } from '#local/startup/workers.js';
import { startStepFunctions } from '#local/step-functions/endpoint.js';
import { startWorkerStreams } from '#local/stream-triggers.js';
import { DASHBOARD_CLIENT_ID } from '#local/ui-server.js';

const stack = new LocalStack();

function serveApi(functions: ApiFunction[], corsOrigins: string[], readiness?: Readiness) {
  return createLocalApi({ functions, load: loadHandler, intercept: readiness?.intercept, corsOrigins });
}

async function main(): Promise<void> {
  stack.onSignals();
  const config = parseLocalConfig();
  const clients = stackClients(config);
  mkdirSync(config.DATA_DIR, { recursive: true });
  stack.use(claimDataDir(config.DATA_DIR));
  // The functions' metric lines go to a file, not into this log (on AWS they stay on stdout, for CloudWatch).
  stack.use(routeMetricLines({ file: config.LOCAL_METRICS_FILE, echo: process.env.LOG_LEVEL === 'debug' }));
  // LOCAL_METER_FILE (npm run cost:measure): its proxies stop last, after everything that calls through them.
  const costMeter = meter();
  if (costMeter) stack.use({ name: 'meter', env: {}, stop: () => costMeter.stop() });

  const dashboard = await startDashboard(stack, config);
  // Bundled mode builds while the dashboard's build (a child process) runs.
  if (config.LOCAL_HANDLERS === 'bundled') buildBundles();
  const readiness = new Readiness();
  readiness.waitFor('identity provider');
  readiness.waitFor('first study sync');

  // Settings every handler shares. Fake credentials: DynamoDB Local takes any, s3rver only S3RVER.
  stack.use({
    name: 'environment',
    env: {
      AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      STUDIES_SOURCE: config.STUDIES_SOURCE,
      // Task services run on this machine (127.0.0.1, plain http): the deployed defaults would refuse them. An
      // explicit setting in the environment wins.
      TASK_SERVICE_ALLOW_PRIVATE: process.env.TASK_SERVICE_ALLOW_PRIVATE ?? 'true',
      TASK_SERVICE_ALLOW_HTTP: process.env.TASK_SERVICE_ALLOW_HTTP ?? 'true',
    },
    stop: async () => {},
  });
  delete process.env.AWS_SESSION_TOKEN;
  delete process.env.AWS_PROFILE;

  const ddb = await startDynamoDb(stack, config);
  const idp = await startIdentityProvider(stack, config, clients, dashboard);
  readiness.done('identity provider');

  // s3rver, persisting under DATA_DIR/s3.
  await assertPortFree(config.S3_PORT, 'S3_PORT');
  // Its CORS allows the dashboard's origins only, as the deployed bucket does by default.
  const s3 = await startS3({
    host: config.HOST,
    dir: join(config.DATA_DIR, 's3'),
    port: config.S3_PORT,
    corsOrigins: dashboard.corsOrigins,
  });
  const s3Endpoint = s3.env.AWS_ENDPOINT_URL_S3;
  stack.adopt(
    's3',
    { ...s3, env: { ...s3.env, AWS_ENDPOINT_URL_S3: await metered('s3', s3Endpoint) } },
    { 'S3 (s3rver)': s3Endpoint },
  );
  stack.use({ name: 'event sink', env: await meteredEventSink(), stop: async () => {} });

  // The Lambda Invoke API for the invoked workers (upload verification; the service-client gate, which makes the
  // task services' clients at the identity provider with its admin client: without one, `create_client` is not
  // offered), run in this process. Only handlers call it, so it takes any free loopback port.
  stack.use(
    await startLocalLambda({
      functions: [...FILES_WORKERS, ...(clients.admin ? COORDINATOR_INVOKED_WORKERS : [])],
    }),
  );

  // The Step Functions endpoint (local/step-functions/). It runs worker handlers in-process, so it comes after
  // every component whose env they need.
  await assertPortFree(config.SFN_PORT, 'SFN_PORT');
  const sfn = await startStepFunctions({
    host: config.HOST,
    port: config.SFN_PORT,
    keepClosed: config.SFN_KEEP_CLOSED,
  });
  stack.adopt('step functions', sfn, { 'Step Functions': sfn.env.AWS_ENDPOINT_URL_SFN });

  // The functions triggered by a table's stream (PhaseWatch), as Lambda's event source mappings run them.
  stack.use(await startWorkerStreams(ddb.endpoint, tableEnv(config.TABLE_PREFIX)));

  // The APIs. Handler modules are imported on their first request, with the environment above in place.
  const coordinatorUrl = await stack.listen(
    'COORDINATOR_PORT',
    serveApi(COORDINATOR_API, dashboard.corsOrigins, readiness),
    config.COORDINATOR_PORT,
    config.HOST,
  );
  const filesUrl = await stack.listen(
    'FILES_PORT',
    serveApi(FILES_API, dashboard.corsOrigins),
    config.FILES_PORT,
    config.HOST,
  );
  dashboard.configure({
    coordinatorUrl,
    filesUrl,
    authority: idp.issuer,
    clientId: DASHBOARD_CLIENT_ID,
    scope: 'openid',
    logoutUrl: null,
    pollMs: 1000,
    taskServices: {
      clientRequired: ['true', '1'].includes(process.env.TASK_SERVICE_CLIENT_REQUIRED ?? ''),
      // Offered where the stack can make clients (the identity provider has an admin client: local/startup/identity.ts).
      createClient: Boolean(process.env.TASK_SERVICE_CLIENTS_IDP_URL),
    },
  });

  stack.schedule(startWorkerSchedules(config, ['reconcile']));
  await firstStudySync(config, readiness, () => stack.stopping);
  if (stack.stopping) return;
  stack.schedule(startWorkerSchedules(config, ['healthCheck', 'studySync']));

  const adminToken = idp.mint({
    sub: 'local-admin',
    roles: ['admin'],
    expiresIn: config.ADMIN_TOKEN_TTL_SECONDS,
  });
  const tokenFile = join(config.DATA_DIR, 'admin-token');
  writeFileSync(tokenFile, `${adminToken}\n`, { mode: 0o600 });
  chmodSync(tokenFile, 0o600);
  try {
    const built = await dashboard.build;
    if (built.built) log.info('dashboard built', { dir: shown(built.dir), ms: built.ms });
  } catch (err) {
    log.error('the dashboard could not be built; the APIs run without it', {
      error: err instanceof Error ? err.message : String(err),
    });
  }
  banner(
    stack,
    config,
    { Dashboard: dashboard.url, 'Coordinator API': coordinatorUrl, 'Files API': filesUrl },
    adminToken,
    tokenFile,
  );
}

main().catch(async (err) => {
  log.error('the local stack failed to start', { error: err instanceof Error ? err.message : String(err) });
  await stack.stopAll().catch(() => {});
  process.exit(1);
});
