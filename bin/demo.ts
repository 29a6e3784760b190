/**
 * `npm run demo`: one release, end to end, on the local stack.
 *
 * Starts the local stack (`npx tsx bin/local.ts`, in a temporary data directory on free ports), two reference task
 * services (examples/task-service), registers them, creates a release over sample studies, publishes it once it is
 * staged, and prints the lifecycle and the events as they happen. Everything is stopped at the end.
 *
 * Settings: DEMO_STAGE_SECONDS (3), DEMO_PUBLISH_SECONDS (2), POLL_SECONDS (2), DEMO_KEEP=1 keeps the data dir.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  clientCredentials,
  type RunningTaskService,
  startTaskService,
} from '../examples/task-service/service.js';
import { freePort } from '../local/dynamodb-local.js';

const stageSeconds = Number(process.env.DEMO_STAGE_SECONDS ?? 3);
const publishSeconds = Number(process.env.DEMO_PUBLISH_SECONDS ?? 2);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const out = (line = '') => process.stdout.write(`${line}\n`);
const started = Date.now();
const t = () => `${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s`;

let stack: ChildProcess | undefined;
const services: RunningTaskService[] = [];
let dataDir = '';

async function main() {
  dataDir = mkdtempSync(join(tmpdir(), 'release-demo-'));
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
  const issuer = `http://127.0.0.1:${ports.IDP_PORT}`;

  out(`${t()}  starting the local stack (data in ${dataDir}) ...`);
  // tsx itself, not through npx: npx does not pass SIGTERM on, and the stack must stop with the demo.
  stack = spawn(join('node_modules', '.bin', 'tsx'), ['bin/local.ts'], {
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
  const admin = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
  out(`${t()}  local stack ready: coordinator ${api}, identity provider ${issuer}`);

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${api}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${admin}`,
        Accept: 'application/json',
        ...(body ? { 'Content-Type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };

  // Two reference task services: they verify the coordinator's token against the local IdP and call back with a
  // token of their own (client credentials, client "task-service").
  const callbackToken = clientCredentials(
    `${issuer}/oauth/token`,
    'task-service',
    'task-service-local-secret',
  );
  for (const name of ['dataservice snapshot', 'portal ETL']) {
    const svc = await startTaskService(
      {
        name,
        coordinatorUrl: api,
        callbackToken,
        auth: { mode: 'jwks', issuer, audience: ['task-services'] },
        stageSeconds: name === 'portal ETL' ? stageSeconds * 1.5 : stageSeconds,
        publishSeconds,
        progressSteps: 3,
        failAt: [],
      },
      { port: 0, host: '127.0.0.1' },
    );
    services.push(svc);
    const registered = await call('POST', '/task-services', {
      name,
      description: `reference task service (${name})`,
      author: 'demo',
      url: svc.url,
    });
    out(`${t()}  registered task service "${name}" ${registered.item_id} at ${svc.url}`);
  }

  const studies = (await call('GET', '/studies?limit=3')).results.map((s: any) => s.item_id).slice(0, 2);
  const created = await call('POST', '/releases', {
    name: 'Demo release',
    description: 'one release through the whole lifecycle',
    studies,
    author: 'demo',
    is_major: false,
  });
  const id = created.item_id;
  out(`${t()}  POST /releases -> ${id} over ${studies.join(', ')} (${created.tasks.length} tasks)`);

  let last = '';
  let published = false;
  for (;;) {
    const r = await call('GET', `/releases/${id}`);
    const line = `release ${r.state.padEnd(12)} ${r.tasks.map((x: any) => `${x.service_name}: ${x.state} ${x.progress}%`).join(' | ')}`;
    if (line !== last) out(`${t()}  ${line}`);
    last = line;
    if (r.state === 'staged' && !published) {
      published = true;
      const res = await call('POST', `/releases/${id}/publish`);
      out(`${t()}  POST /releases/${id}/publish -> ${JSON.stringify(res)}`);
    }
    if (['published', 'canceled', 'failed'].includes(r.state)) {
      out(`${t()}  release ${id} ended ${r.state}${r.state === 'published' ? `, version ${r.version}` : ''}`);
      break;
    }
    await sleep(200);
  }

  const events = (await call('GET', `/events?release=${id}&limit=100`)).results.reverse();
  out('');
  out('Events (GET /events?release=...):');
  for (const e of events) out(`  ${e.created_at}  ${e.event_type.padEnd(5)}  ${e.message}`);
}

async function cleanup() {
  if (services.length) {
    out(`${t()}  stopping the task services ...`);
    await Promise.all(services.splice(0).map((s) => s.stop()));
  }
  if (stack && stack.exitCode === null) {
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
    process.stderr.write(`demo failed: ${err instanceof Error ? err.message : String(err)}\n`);
    await cleanup();
    process.exit(1);
  });
process.on('SIGINT', () => void cleanup().then(() => process.exit(130)));
