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
 * Start it, then `use(component)`: its `env` (endpoints, table names, issuer, ...) is merged into process.env, and it
 * is stopped in reverse order on Ctrl-C or SIGTERM. Everything that imports handler modules comes after the
 * components whose env they need, because handlers parse their config once, at module load. Adding a component is a
 * few lines in main(). Every component is imported statically and every scheduled function is loaded by its
 * manifest entry, so a mistyped path fails the start (or tsc) instead of silently leaving a part out.
 *
 * Every setting is an environment variable with a default (local/config.ts; the README's configuration table).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { isAbsolute, join, relative } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context, ScheduledEvent } from 'aws-lambda';
import { migrateCoordinator, migrateFiles } from '#functions/adapters/dynamodb/migrate.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { log } from '#functions/shared/log.js';
import { type ApiFunction, COORDINATOR_API, FILES_API } from '#lib/api-manifest.js';
import { bundleAll } from '#lib/bundling.js';
import { FILES_WORKERS, WORKER_FUNCTIONS, type WorkerFunction } from '#lib/orchestration-manifest.js';
import { type Component, loadHandler } from '#local/component.js';
import { type LocalConfig, parseLocalConfig, publicHost } from '#local/config.js';
import { faithfulSettings } from '#local/dynamodb-faithful.js';
import { startFaithfulProxy } from '#local/dynamodb-faithful-proxy.js';
import { createTables, localClient, startDynamoLocal, tableEnv } from '#local/dynamodb-local.js';

import { bundlesDir } from '#local/handlers.js';
import { createLocalApi, lambdaContext } from '#local/http-server.js';
import { parseClients } from '#local/idp/clients.js';
import { startIdp } from '#local/idp/server.js';
import { startLocalLambda } from '#local/lambda.js';
import { meter, metered, meteredEventSink } from '#local/meter/meter.js';
import { routeMetricLines } from '#local/metrics-file.js';
import { Readiness } from '#local/readiness.js';
import { startS3 } from '#local/s3.js';
import { type Schedules, scheduledEvent, startSchedules } from '#local/scheduler.js';
import { startStepFunctions } from '#local/step-functions/endpoint.js';
import { startWorkerStreams } from '#local/stream-triggers.js';
import { ensureUiBuilt } from '#local/ui-build.js';
import { createUiServer, DASHBOARD_CLIENT_ID, type DashboardConfig } from '#local/ui-server.js';

type WorkerHandler = (event: ScheduledEvent, context: Context) => Promise<unknown>;

/** What a start function of local/ returns: a Component but for its name. */
type Started = Pick<Component, 'env' | 'urls' | 'stop'>;

const components: Component[] = [];
const servers: Server[] = [];
const schedules: Schedules[] = [];
let stopping = false;

function use(component: Component): Component {
  components.push(component);
  Object.assign(process.env, component.env);
  return component;
}

/** Adopts what another part's start function returned, keeping only the Component surface. */
function adopt(name: string, started: Started, urls: Record<string, string>): Component {
  return use({ name, env: { ...started.env }, urls: started.urls ?? urls, stop: () => started.stop() });
}

async function assertPortFree(port: number, name: string): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(
              `Port ${port} (${name}) is already in use: is another local stack running? Set ${name}.`,
            )
          : err,
      ),
    );
    probe.listen(port, '0.0.0.0', () => probe.close(() => resolve()));
  });
}

async function listen(name: string, server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new Error(`Port ${port} (${name}) is already in use`) : err),
    );
    server.listen(port, host, () => resolve());
  });
  servers.push(server);
  return `http://${publicHost(host)}:${(server.address() as { port: number }).port}`;
}

function serveApi(functions: ApiFunction[], corsOrigins: string[], readiness?: Readiness): Server {
  return createLocalApi({ functions, load: loadHandler, intercept: readiness?.intercept, corsOrigins });
}

function invokeWorker(entry: string, ruleName: string): Promise<unknown> {
  return loadHandler<WorkerHandler>(entry).then((handler) =>
    handler(scheduledEvent(ruleName), lambdaContext(`${ruleName}-${Date.now()}`)),
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Data kept in DATA_DIR from earlier layouts is brought up to date once, before anything serves: releases from before
 * the active index join it (so the reconciler sees them), and tables from before the scale layout get their filter
 * keys, counters and task views (functions/adapters/dynamodb/migrate.ts; a marker item makes later starts skip it).
 */
async function migrateStoredData(client: DynamoDBClient, prefix: string): Promise<void> {
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  const tables = tableEnv(prefix);
  const coordinator = { coordinator: tables.COORDINATOR_TABLE, studies: tables.STUDIES_TABLE };
  const releases = new DynamoReleaseRepository(doc, coordinator);
  const added = await releases.indexActiveReleases();
  if (added.length) log.info('releases added to the active index', { releases: added });
  const rewritten =
    (await migrateCoordinator(doc, coordinator)) + (await migrateFiles(doc, tables.FILES_TABLE));
  if (rewritten) log.info('stored items moved to the current key layout', { items: rewritten });
}

/**
 * The first study sync gates readiness: it is retried until it succeeds (a wrong STUDIES_SOURCE keeps /health at
 * 503 and says so in the log) or the stack stops.
 */
async function firstStudySync(config: LocalConfig, readiness: Readiness): Promise<void> {
  const sync = WORKER_FUNCTIONS.find((w) => w.schedule === 'studySync');
  if (!sync) throw new Error('lib/orchestration-manifest.ts names no study-sync function');
  for (let attempt = 1; !stopping; attempt++) {
    try {
      const result = await invokeWorker(sync.entry, 'local-StudySync');
      log.info('first study sync done', { source: config.STUDIES_SOURCE, result });
      readiness.done('first study sync');
      return;
    } catch (err) {
      log.error('first study sync failed; retrying', {
        attempt,
        source: config.STUDIES_SOURCE,
        retryInSeconds: config.STUDY_SYNC_RETRY_SECONDS,
        error: err instanceof Error ? err.message : String(err),
      });
      await sleep(config.STUDY_SYNC_RETRY_SECONDS * 1000);
    }
  }
}

/**
 * The scheduled workers, as EventBridge runs them on AWS. `which` picks the kinds: the reconciler starts as soon as
 * the APIs listen (its first run resumes whatever a previous stack left in flight), the others after the first
 * study sync.
 */
function startWorkerSchedules(
  config: LocalConfig,
  which: readonly NonNullable<WorkerFunction['schedule']>[],
): Schedules {
  const every = {
    healthCheck: config.HEALTH_INTERVAL_SECONDS,
    studySync: config.STUDY_SYNC_SECONDS,
    reconcile: config.RECONCILE_SECONDS,
  };
  const list = WORKER_FUNCTIONS.flatMap((w) => {
    if (!w.schedule || !which.includes(w.schedule)) return [];
    return [
      {
        name: w.name,
        everyMs: every[w.schedule] * 1000,
        runNow: w.schedule === 'reconcile',
        run: async () => {
          await invokeWorker(w.entry, `local-${w.name}`);
        },
      },
    ];
  });
  return startSchedules(list);
}

async function stopAll(): Promise<void> {
  stopping = true;
  await Promise.all(schedules.map((s) => s.stop()));
  await Promise.all(
    servers.map(
      (s) =>
        new Promise<void>((resolve) => {
          s.close(() => resolve());
          s.closeAllConnections();
        }),
    ),
  );
  for (const c of components.reverse()) {
    try {
      await c.stop();
    } catch (err) {
      log.error('component did not stop cleanly', { component: c.name, error: String(err) });
    }
  }
}

/**
 * Two stacks on one DATA_DIR would share DynamoDB Local's database file. DATA_DIR/local.pid names the stack that
 * owns the directory (a stale file from a killed stack is taken over); it is also how scripts find the process.
 */
function claimDataDir(dataDir: string): Component {
  const pidFile = join(dataDir, 'local.pid');
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid))
      throw new Error(`${dataDir} is in use by the local stack with pid ${pid}; stop it or set DATA_DIR`);
  }
  writeFileSync(pidFile, `${process.pid}\n`);
  return {
    name: 'data dir lock',
    env: {},
    stop: async () => rmSync(pidFile, { force: true }),
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const shown = (path: string) => {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
};

function onSignals(): void {
  const shutdown = (signal: string) => {
    if (stopping) return;
    process.stdout.write(`\n${signal}: stopping the local stack...\n`);
    // A stop that hangs must not leave the terminal stuck: children have their own kill fallbacks.
    setTimeout(() => {
      log.error('the local stack did not stop within 20 s; exiting anyway');
      process.exit(1);
    }, 20_000).unref();
    stopAll().then(
      () => process.exit(0),
      (err) => {
        log.error('stopping failed', { error: String(err) });
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGHUP', () => shutdown('SIGHUP'));
}

async function main(): Promise<void> {
  onSignals();
  const config = parseLocalConfig();
  // The coordinator's own client gets tokens for the task services' audience only, so a task service that replays
  // the token it received against the coordinator is refused (the APIs accept AUTH_AUDIENCE alone).
  const clients = parseClients(config.IDP_CLIENTS).map((c) =>
    c.client_id === config.COORDINATOR_CLIENT_ID
      ? { ...c, audience: c.audience ?? config.TASK_SERVICE_AUDIENCE }
      : c,
  );
  const coordinatorClient = clients.find((c) => c.client_id === config.COORDINATOR_CLIENT_ID);
  if (!coordinatorClient)
    throw new Error(
      `Invalid configuration: COORDINATOR_CLIENT_ID "${config.COORDINATOR_CLIENT_ID}" is not in IDP_CLIENTS`,
    );
  const adminClient = clients.find((c) => c.roles.includes('admin'));
  if (coordinatorClient.audience === config.AUTH_AUDIENCE)
    throw new Error(
      "Invalid configuration: the coordinator client's audience must differ from AUTH_AUDIENCE, or its token would work against the coordinator",
    );
  mkdirSync(config.DATA_DIR, { recursive: true });
  use(claimDataDir(config.DATA_DIR));
  // The functions' metric lines go to a file, not into this log (on AWS they stay on stdout, for CloudWatch).
  use(routeMetricLines({ file: config.LOCAL_METRICS_FILE, echo: process.env.LOG_LEVEL === 'debug' }));
  // LOCAL_METER_FILE (npm run cost:measure): its proxies stop last, after everything that calls through them.
  const costMeter = meter();
  if (costMeter) use({ name: 'meter', env: {}, stop: () => costMeter.stop() });

  // The dashboard: rebuilt (only if its sources changed) while DynamoDB Local starts, and served from the start so
  // its port, and so the origin the APIs and the identity provider must allow, is known before they start.
  const uiBuild = ensureUiBuilt();
  const uiDist = uiBuild.then((b) => b.dir);
  // A failed build is reported below, and by the UI server to whoever asks for a page.
  uiDist.catch(() => {});
  let dashboardConfig: DashboardConfig | null = null;
  await assertPortFree(config.UI_PORT, 'UI_PORT');
  const uiUrl = await listen(
    'UI_PORT',
    createUiServer({
      dist: uiDist,
      config: () => dashboardConfig,
      connect: () => (process.env.AWS_ENDPOINT_URL_S3 ? [process.env.AWS_ENDPOINT_URL_S3] : []),
    }),
    config.UI_PORT,
    config.HOST,
  );
  const uiPort = new URL(uiUrl).port;
  const dashboardUrl = (config.UI_PUBLIC_URL ?? uiUrl).replace(/\/$/, '');
  // The dashboard may be opened as 127.0.0.1 or localhost; both origins are its own.
  const corsOrigins = [
    ...new Set([new URL(dashboardUrl).origin, `http://127.0.0.1:${uiPort}`, `http://localhost:${uiPort}`]),
  ];
  // Bundled mode builds while the dashboard's build (a child process) runs.
  if (config.LOCAL_HANDLERS === 'bundled') buildBundles();
  const readiness = new Readiness();
  readiness.waitFor('identity provider');
  readiness.waitFor('first study sync');

  // Settings every handler shares. Fake credentials: DynamoDB Local takes any, s3rver only S3RVER.
  use({
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

  // DynamoDB Local, persisting under DATA_DIR/dynamodb; tables from the same definitions as the CDK stack.
  await assertPortFree(config.DYNAMODB_PORT, 'DYNAMODB_PORT');
  const ddb = await startDynamoLocal({
    port: config.DYNAMODB_PORT || undefined,
    dir: join(config.DATA_DIR, 'dynamodb'),
    heap: config.DYNAMODB_HEAP,
  });
  // If this process dies without a clean stop (an uncaught error), the JVM must not outlive it.
  process.on('exit', () => {
    if (ddb.process.exitCode === null && ddb.process.signalCode === null) ddb.process.kill('SIGKILL');
  });
  use({
    name: 'dynamodb',
    env: {
      AWS_ENDPOINT_URL_DYNAMODB: await metered('dynamodb', ddb.endpoint),
      ...tableEnv(config.TABLE_PREFIX),
    },
    urls: { 'DynamoDB Local': ddb.endpoint },
    stop: ddb.stop,
  });
  // DYNAMODB_FAITHFUL: the handlers meet DynamoDB's transaction conflicts and throttling through a proxy in front.
  const faithful = faithfulSettings();
  if (faithful) {
    const proxy = await startFaithfulProxy(process.env.AWS_ENDPOINT_URL_DYNAMODB ?? ddb.endpoint, faithful, {
      port: config.DYNAMODB_PROXY_PORT,
    });
    use({
      name: 'dynamodb faithful proxy',
      env: { AWS_ENDPOINT_URL_DYNAMODB: proxy.endpoint },
      urls: { [`DynamoDB (faithful: ${[...faithful.modes].join(', ')})`]: proxy.endpoint },
      stop: proxy.stop,
    });
  }
  const ddbClient = localClient(ddb.endpoint);
  await createTables(ddbClient, config.TABLE_PREFIX);
  await migrateStoredData(ddbClient, config.TABLE_PREFIX);
  ddbClient.destroy();

  // The identity provider: the coordinator verifies its tokens and uses its client credentials.
  const idp = await startIdp({
    port: config.IDP_PORT,
    host: config.HOST,
    dataDir: config.DATA_DIR,
    issuer: config.IDP_ISSUER,
    audience: config.AUTH_AUDIENCE,
    clients,
    verifyAudience: coordinatorClient.audience,
    tokenTtlSeconds: config.IDP_TOKEN_TTL_SECONDS,
    devTokens: config.IDP_DEV_TOKENS,
    corsOrigins,
    redirectUris: [`${dashboardUrl}/`],
  });
  use({
    name: 'identity provider',
    env: {
      AUTH_ISSUER: idp.issuer,
      AUTH_AUDIENCE: idp.audience,
      AUTH_JWKS_URI: idp.jwksUri,
      AUTH_URL: idp.url,
      COORDINATOR_TOKEN_URL: idp.tokenUrl,
      COORDINATOR_CLIENT_ID: coordinatorClient.client_id,
      COORDINATOR_CLIENT_SECRET: coordinatorClient.client_secret,
      // `create_client` makes each task service its own client here, with an admin client's credentials (as the
      // deployed coordinator makes Cognito app clients with its IAM role). Without an admin client: not offered.
      ...(adminClient
        ? {
            TASK_SERVICE_CLIENTS_IDP_URL: idp.url,
            TASK_SERVICE_CLIENTS_IDP_CLIENT_ID: adminClient.client_id,
            TASK_SERVICE_CLIENTS_IDP_CLIENT_SECRET: adminClient.client_secret,
          }
        : {}),
    },
    urls: { 'Identity provider': `http://${publicHost(config.HOST)}:${new URL(idp.url).port}` },
    stop: idp.stop,
  });
  readiness.done('identity provider');

  // s3rver, persisting under DATA_DIR/s3.
  await assertPortFree(config.S3_PORT, 'S3_PORT');
  const s3 = await startS3({ host: config.HOST, dir: join(config.DATA_DIR, 's3'), port: config.S3_PORT });
  const s3Endpoint = s3.env.AWS_ENDPOINT_URL_S3;
  adopt(
    's3',
    { ...s3, env: { ...s3.env, AWS_ENDPOINT_URL_S3: await metered('s3', s3Endpoint) } },
    {
      'S3 (s3rver)': s3Endpoint,
    },
  );
  use({ name: 'event sink', env: await meteredEventSink(), stop: async () => {} });

  // The Lambda Invoke API for the asynchronously invoked workers (upload verification), run in this process. Only
  // handlers call it, so it takes any free loopback port.
  use(await startLocalLambda({ functions: FILES_WORKERS }));

  // The Step Functions endpoint (local/step-functions/). It runs worker handlers in-process, so it comes after
  // every component whose env they need.
  await assertPortFree(config.SFN_PORT, 'SFN_PORT');
  const sfn = await startStepFunctions({
    host: config.HOST,
    port: config.SFN_PORT,
    keepClosed: config.SFN_KEEP_CLOSED,
  });
  adopt('step functions', sfn, { 'Step Functions': sfn.env.AWS_ENDPOINT_URL_SFN });

  // The functions triggered by a table's stream (PhaseWatch), as Lambda's event source mappings run them.
  use(await startWorkerStreams(ddb.endpoint, tableEnv(config.TABLE_PREFIX)));

  // The APIs. Handler modules are imported on their first request, with the environment above in place.
  const coordinatorUrl = await listen(
    'COORDINATOR_PORT',
    serveApi(COORDINATOR_API, corsOrigins, readiness),
    config.COORDINATOR_PORT,
    config.HOST,
  );
  const filesUrl = await listen(
    'FILES_PORT',
    serveApi(FILES_API, corsOrigins),
    config.FILES_PORT,
    config.HOST,
  );
  dashboardConfig = {
    coordinatorUrl,
    filesUrl,
    authority: idp.issuer,
    clientId: DASHBOARD_CLIENT_ID,
    scope: 'openid',
    logoutUrl: null,
    pollMs: 1000,
  };

  schedules.push(startWorkerSchedules(config, ['reconcile']));
  await firstStudySync(config, readiness);
  if (stopping) return;
  schedules.push(startWorkerSchedules(config, ['healthCheck', 'studySync']));

  const adminToken = idp.mint({
    sub: 'local-admin',
    roles: ['admin'],
    expiresIn: config.ADMIN_TOKEN_TTL_SECONDS,
  });
  const tokenFile = join(config.DATA_DIR, 'admin-token');
  writeFileSync(tokenFile, `${adminToken}\n`, { mode: 0o600 });
  chmodSync(tokenFile, 0o600);
  try {
    const built = await uiBuild;
    if (built.built) log.info('dashboard built', { dir: shown(built.dir), ms: built.ms });
  } catch (err) {
    log.error('the dashboard could not be built; the APIs run without it', {
      error: err instanceof Error ? err.message : String(err),
    });
  }
  banner(
    config,
    { Dashboard: dashboardUrl, 'Coordinator API': coordinatorUrl, 'Files API': filesUrl },
    adminToken,
    tokenFile,
  );
}

/**
 * LOCAL_HANDLERS=bundled: every handler (APIs, state machine tasks, schedules) runs from the bundles that deploy,
 * built here, before anything loads a handler, so they are never stale.
 */
function buildBundles(): void {
  const dir = bundlesDir();
  const started = performance.now();
  const built = bundleAll(dir);
  log.info('handlers run from their bundles (LOCAL_HANDLERS=bundled)', {
    bundles: built.length,
    dir: shown(dir),
    seconds: Math.round((performance.now() - started) / 100) / 10,
  });
}

function banner(config: LocalConfig, apis: Record<string, string>, token: string, tokenFile: string): void {
  const urls: Record<string, string> = { ...apis };
  for (const c of components) Object.assign(urls, c.urls);
  const width = Math.max(...Object.keys(urls).map((k) => k.length));
  const hours = Math.round((config.ADMIN_TOKEN_TTL_SECONDS / 3600) * 10) / 10;
  const lines = [
    '',
    `Local stack ready (data in ${shown(config.DATA_DIR)}; handlers: ${config.LOCAL_HANDLERS}; Ctrl-C stops it)`,
    ...Object.entries(urls).map(([k, v]) => `  ${k.padEnd(width)}  ${v}`),
    '',
    `Admin token (valid ${hours} h, also in ${shown(tokenFile)}):`,
    token,
    '',
    `Open ${apis.Dashboard} and sign in (roles "admin" to steer releases).`,
    `Metrics (CloudWatch EMF lines) are written to ${shown(config.LOCAL_METRICS_FILE)}.`,
    `Try: curl -H "Authorization: Bearer $(cat ${shown(tokenFile)})" ${apis['Coordinator API']}/studies`,
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch(async (err) => {
  log.error('the local stack failed to start', { error: err instanceof Error ? err.message : String(err) });
  await stopAll().catch(() => {});
  process.exit(1);
});
