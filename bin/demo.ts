/**
 * `npm run demo`: one release, end to end, on the local stack, driven with `drc` (the operator CLI), so it doubles
 * as a walkthrough of it.
 *
 * Starts the local stack (`npx tsx bin/local.ts`, in a temporary data directory on free ports) and two reference
 * task services (examples/task-service); then, each command printed before it runs: `drc login`, registers the
 * services, creates a release over two sample studies and watches it to `staged`, publishes it and watches it to
 * `published`, lists its events, and uploads, lists, downloads and signs a study file. Everything is stopped at the
 * end.
 *
 * Settings: DEMO_STAGE_SECONDS (3), DEMO_PUBLISH_SECONDS (2), POLL_SECONDS (2), DEMO_KEEP=1 keeps the data dir.
 *
 * Ctrl-C, or SIGINT or SIGTERM sent to this process alone (the `demo` script execs node, so npm's process is this
 * one), stops what runs (the drc command, the task services, the stack), removes the data dir and exits 0.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  clientCredentials,
  type RunningTaskService,
  startTaskService,
} from '#examples/task-service/service.js';
import { freePort } from '#local/dynamodb-local.js';
import { withFreshPorts } from '#local/port-race.js';

const stageSeconds = Number(process.env.DEMO_STAGE_SECONDS ?? 3);
const publishSeconds = Number(process.env.DEMO_PUBLISH_SECONDS ?? 2);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const out = (line = '') => process.stdout.write(`${line}\n`);
const started = Date.now();
const t = () => `${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s`;

let stack: ChildProcess | undefined;
const services: RunningTaskService[] = [];
let dataDir = '';
/** The drc command running now, stopped with the demo. */
let running: ChildProcess | undefined;
/** Set by SIGINT / SIGTERM: what fails from then on is the stop itself, not an error of the demo. */
let stopping = false;

/** Starts the local stack on free ports and waits until it is ready; the ports it runs on. */
async function startStack() {
  const ports = {
    COORDINATOR_PORT: await freePort(),
    FILES_PORT: await freePort(),
    IDP_PORT: await freePort(),
    S3_PORT: await freePort(),
    SFN_PORT: await freePort(),
    UI_PORT: await freePort(),
    DYNAMODB_PORT: await freePort(),
  };
  const api = `http://127.0.0.1:${ports.COORDINATOR_PORT}`;

  out(`${t()}  starting the local stack (data in ${dataDir}) ...`);
  // Node with tsx as its loader, as `npm start` runs it: no npx (it does not pass SIGTERM on) and no tsx command in
  // between (it may end the child itself when a signal reaches only the parent), so the stack stops with the demo.
  stack = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts'], {
    env: {
      ...process.env,
      ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
      DATA_DIR: dataDir,
      POLL_SECONDS: process.env.POLL_SECONDS ?? '2',
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stackLog = '';
  stack.stdout?.on('data', (d: Buffer) => {
    stackLog += d.toString();
  });
  stack.stderr?.on('data', (d: Buffer) => {
    stackLog += d.toString();
  });
  // The stack takes several seconds (a JVM, the tables, the first study sync): say what it is waiting for, and
  // repeat it every few seconds, so the demo is never silent.
  const deadline = Date.now() + 90_000;
  let said = '';
  let saidAt = 0;
  for (;;) {
    if (stack.exitCode !== null) throw new Error(`the local stack exited:\n${stackLog}`);
    const status = await fetch(`${api}/health`)
      .then(async (r) =>
        r.status === 200
          ? 'ready'
          : (((await r.json().catch(() => undefined)) as { error?: { message?: string } } | undefined)?.error
              ?.message ?? `GET /health answered ${r.status}`),
      )
      .catch(() => 'starting DynamoDB Local, the identity provider, s3rver and Step Functions');
    if (status === 'ready') break;
    if (status !== said || Date.now() - saidAt > 3000) {
      out(`${t()}  ${status} ...`);
      said = status;
      saidAt = Date.now();
    }
    if (Date.now() > deadline) throw new Error(`the local stack did not get ready:\n${stackLog}`);
    await sleep(250);
  }
  return ports;
}

async function main() {
  dataDir = mkdtempSync(join(tmpdir(), 'release-demo-'));
  // Free ports are probed and let go before the stack binds them: another process may take one in between, and the
  // stack then stops naming it. That start is tried again on new ports (local/port-race.ts).
  const ports = await withFreshPorts(startStack);
  const api = `http://127.0.0.1:${ports.COORDINATOR_PORT}`;
  const issuer = `http://127.0.0.1:${ports.IDP_PORT}`;
  out(`${t()}  local stack ready: coordinator ${api}, identity provider ${issuer}`);

  // From here on everything goes through drc, as an operator would type it (its own config dir, so the demo never
  // touches your login).
  const drcEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DRC_COORDINATOR_URL: api,
    DRC_FILES_URL: `http://127.0.0.1:${ports.FILES_PORT}`,
    DRC_IDP_URL: issuer,
    DRC_CONFIG_DIR: join(dataDir, 'drc'),
  };
  delete drcEnv.DRC_TOKEN;
  // Child processes, never spawnSync: the task services live in this process and must keep answering meanwhile.
  const runDrc = (args: string[], capture: boolean) =>
    new Promise<string>((resolve, reject) => {
      if (stopping) {
        reject(new Error('stopping'));
        return;
      }
      const child = spawn(process.execPath, [join('bin', 'drc.mjs'), ...args], {
        env: drcEnv,
        stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit',
      });
      running = child;
      let text = '';
      let err = '';
      child.stdout?.on('data', (d: Buffer) => {
        text += d.toString();
      });
      child.stderr?.on('data', (d: Buffer) => {
        err += d.toString();
      });
      child.once('close', (code, signal) => {
        if (running === child) running = undefined;
        if (code === 0) resolve(text);
        else reject(new Error(`drc ${args.join(' ')} exited with status ${code ?? signal} ${err}`));
      });
    });
  /** Runs `drc args`, printing the command line; its output goes to this terminal (tables and bars on a TTY). */
  const drc = async (...args: string[]) => {
    out(`\n$ drc ${args.map((a) => (/[\s"']/.test(a) ? `"${a}"` : a)).join(' ')}`);
    await runDrc(args, false);
  };
  /** Runs `drc --json args` quietly and returns its answer (for the ids the next commands need). */
  const drcJson = async (...args: string[]) => JSON.parse(await runDrc(['--json', ...args], true));

  await drc('login', '--sub', 'demo');

  // Two reference task services: they verify the coordinator's token against the local IdP and, once registered,
  // the signature of every action with the secret their registration answered; each calls back with a client of
  // its own, which the registration made (--create-client).
  for (const name of ['dataservice snapshot', 'portal ETL']) {
    const secrets: string[] = [];
    let callbackToken: (() => Promise<string | null>) | undefined;
    const svc = await startTaskService(
      {
        name,
        coordinatorUrl: api,
        callbackToken: () => callbackToken?.() ?? Promise.resolve(null),
        auth: { mode: 'jwks', issuer, audience: ['task-services'] },
        signingSecrets: () => secrets,
        stageSeconds: name === 'portal ETL' ? stageSeconds * 1.5 : stageSeconds,
        publishSeconds,
        progressSteps: 3,
        failAt: [],
      },
      { port: 0, host: '127.0.0.1' },
    );
    services.push(svc);
    const args = ['services', 'add', name, svc.url, '--description', `reference task service (${name})`];
    out(
      `\n$ drc ${args.map((a) => (/[\s"']/.test(a) ? `"${a}"` : a)).join(' ')} --author demo --create-client`,
    );
    const added = await drcJson(...args, '--author', 'demo', '--create-client');
    out(`  ${added.kf_id}: signing secret and client ${added.client_id} handed to the service (shown once)`);
    secrets.push(added.secret);
    callbackToken = clientCredentials(`${issuer}/oauth/token`, added.client_id, added.client_secret);
  }
  await drc('services', 'ls');
  await drc('studies', 'ls', '--limit', '3');

  // Two visible studies (the newest sample study is a hidden one, which the portal would not show).
  const studies = (await drcJson('studies', 'ls', '--limit', '10')).results
    .filter((s: { visible: boolean }) => s.visible)
    .slice(0, 2)
    .map((s: { kf_id: string }) => s.kf_id);
  const studyArgs = studies.flatMap((id: string) => ['--study', id]);
  await drc(
    'releases',
    'create',
    '--name',
    'Demo release',
    '--description',
    'one release, end to end',
    ...studyArgs,
    '--watch',
  );
  const id: string = (await drcJson('releases', 'ls', '--limit', '1')).results[0].kf_id;
  await drc('releases', 'publish', id);
  await drc('releases', 'watch', id);
  await drc('events', 'ls', '--release', id, '--limit', '20');

  // A study file: upload (SHA-256 declared and checked), download (checked again), and a signed link.
  const sample = join(dataDir, 'genes.tsv');
  writeFileSync(sample, 'gene\tcount\nBRCA1\t12\nTP53\t7\n'.repeat(1000));
  await drc('files', 'upload', studies[0], sample, '--content-type', 'text/tab-separated-values');
  await drc('files', 'ls', studies[0]);
  const fileId: string = (await drcJson('files', 'ls', studies[0], '--limit', '1')).results[0].kf_id;
  await drc('files', 'download', studies[0], fileId, '-o', join(dataDir, 'genes.downloaded.tsv'));
  await drc('signed-url', studies[0], fileId);
}

let cleaning: Promise<void> | undefined;
/** Stops everything the demo started, once, whoever asks (the end of the demo, a failure, a signal). */
function cleanup(): Promise<void> {
  cleaning ??= stopAll();
  return cleaning;
}

async function stopAll() {
  running?.kill('SIGTERM');
  if (services.length) {
    out(`${t()}  stopping the task services ...`);
    await Promise.all(services.splice(0).map((s) => s.stop()));
  }
  if (stack && stack.exitCode === null && stack.signalCode === null) {
    out(`${t()}  stopping the local stack ...`);
    const exited = new Promise<number | null>((r) => stack?.once('exit', (code) => r(code)));
    stack.kill('SIGTERM');
    // An unref'd timer: a pending 15 s guard must not keep the demo alive once the stack is gone.
    const guard = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 15_000).unref());
    const code = await Promise.race([exited, guard]);
    out(
      code === 'timeout'
        ? `${t()}  the local stack did not stop within 15 s`
        : `${t()}  local stack stopped (exit status ${code})`,
    );
  }
  if (dataDir && !process.env.DEMO_KEEP) {
    rmSync(dataDir, { recursive: true, force: true });
    out(`${t()}  removed ${dataDir}; done`);
  } else if (dataDir) out(`${t()}  kept ${dataDir} (DEMO_KEEP); done`);
}

main()
  .then(cleanup)
  .catch(async (err) => {
    // After a signal, the step that was running fails because the stop pulled things from under it: not news.
    if (stopping) return;
    process.stderr.write(`demo failed: ${err instanceof Error ? err.message : String(err)}\n`);
    await cleanup();
    process.exit(1);
  });

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    out(`\n${t()}  ${signal}: stopping the demo ...`);
    void cleanup().then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`demo: stopping failed: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
      },
    );
  });
