/**
 * `npm run cost:measure`: counts what the running code makes AWS bill, and writes the cost profile
 * (docs/cost-profile.json) that `npm run cost` prices.
 *
 * It starts the local stack (bench/lib/stack.ts) with LOCAL_METER_FILE set, so the stack records every Lambda
 * handler call (duration, log bytes, API request and answer sizes), every DynamoDB request with the capacity units
 * DynamoDB Local computes for it (ReturnConsumedCapacity=INDEXES, asked for by the meter's proxy), every S3 request
 * by price class and every publish to the events topic (local/meter.ts). Step Functions transitions come from the
 * execution histories of the local endpoint, exactly as bench:release counts them.
 *
 * Scenarios:
 *   release    N task services (COST_SERVICES, default 1,10,50) x P poll rounds while staging (COST_POLLS, 1,5,20),
 *              create -> staged -> publish -> published, task services that never call back (the fake task
 *              service with stagePolls = P; progress rises each round, so each round writes). Every
 *              usage key is fitted to c1 + cN*N + cP*P + cNP*N*P over the points.
 *   callback   10 fake task services that report staged/published with PATCH /tasks/<id>: the cost of one callback,
 *              printed with its DynamoDB requests by operation and its write units beside those of the profile this
 *              run replaces (before / after).
 *   download   COST_DOWNLOADS (10) of each: bearer JWT direct (64 KiB, answered by the function), signed URL mint +
 *              claim (2 MiB, 302 to S3, followed), bearer JWT redirect (2 MiB, 302, followed).
 *   schedules  a second stack running the health check and the reconciler every 4 s and the study sync every 6 s,
 *              through phases with S = 0 / 10 registered services, A = 0 / 5 releases in flight and 5 / 50
 *              studies at the source; each scheduled run is fitted to c1 + cS*S + cA*A + cStudies*studies.
 *
 * The stack runs the functions' deployed LOG_LEVEL (cdk.json), with POLL_SECONDS=1 so poll rounds take a second
 * (a round costs the same whatever its interval). Durations are this machine's, with DynamoDB Local and s3rver
 * behind the calls: indicative of Lambda's, not equal to them.
 *
 * Settings: COST_PROFILE (output, default docs/cost-profile.json), COST_SERVICES, COST_POLLS, COST_DOWNLOADS.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { HistoryEvent } from '@aws-sdk/client-sfn';
import { App, Stack } from 'aws-cdk-lib';
import type { CfnStage } from 'aws-cdk-lib/aws-apigatewayv2';
import { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { COORDINATOR_API, FILES_API } from '#lib/api-manifest.js';
import { ManifestHttpApi } from '#lib/http-api.js';
import { WORKER_FUNCTIONS } from '#lib/orchestration-manifest.js';
import { TABLES } from '#lib/table-definitions.js';
import { ROOT } from '#local/config.js';
import { tableEnv } from '#local/dynamodb-local.js';
import { type DdbRecord, type InvokeRecord, itemSize, type MeterRecord } from '#local/meter.js';
import { localDefinition } from '#local/step-functions.js';
import { startFakeFleet } from '#test/helpers/fake-task-service/index.js';
import {
  api,
  createRelease,
  disableServices,
  type ReleaseCtx,
  registerFakes,
  registerService,
  releaseCtx,
  releaseHistory,
  retire,
  sfnClient,
  sleep,
  waitFor,
} from '../lib/releases.js';
import { machineInfo } from '../lib/report.js';
import { benchStack, type StackEndpoints } from '../lib/stack.js';
import type { CostProfile } from './profile.js';
import { deployedLogLevel, deploySettings } from './settings.js';
import {
  accessLogLine,
  add,
  fitUsage,
  historyEventsPerEntry,
  lambdaPlatformLog,
  lambdaPlatformLogBytes,
  scale,
  sfnLogRecordBytes,
  type Usage,
} from './usage.js';

const OUT = resolve(ROOT, process.env.COST_PROFILE ?? 'docs/cost-profile.json');
const SERVICES = (process.env.COST_SERVICES ?? '1,10,50').split(',').map(Number);
const POLLS = (process.env.COST_POLLS ?? '1,5,20').split(',').map(Number);
const DOWNLOADS = Number(process.env.COST_DOWNLOADS ?? 10);
const LOCAL_POLL_SECONDS = 1;
const SMALL_BYTES = 64 * 1024;
const LARGE_BYTES = 2 * 1024 * 1024;

const say = (line: string) => process.stdout.write(`${line}\n`);
const settings = deploySettings();
const MEMORY_MB = settings.functionMemoryMb;
const STATE_MACHINE = `${settings.prefix}-release`;
const { definition } = localDefinition();

/** Manifest name of a handler entry (the Lambda function it deploys as). */
const FUNCTION_NAMES = new Map<string, string>();
for (const f of [...WORKER_FUNCTIONS, ...COORDINATOR_API, ...FILES_API])
  if (!FUNCTION_NAMES.has(f.entry)) FUNCTION_NAMES.set(f.entry, f.name);

/** The access-log format of the HTTP API stages, as lib/http-api.ts synthesizes it. */
function accessLogFormat(): string {
  const stack = new Stack(new App(), 'CostAccessLogFormat');
  const built = new ManifestHttpApi(stack, 'Api', {
    apiName: 'cost',
    description: 'cost model',
    manifest: COORDINATOR_API,
    functions: Object.fromEntries(
      COORDINATOR_API.map((e) => [
        e.name,
        LambdaFunction.fromFunctionArn(
          stack,
          e.name,
          `arn:aws:lambda:us-east-1:123456789012:function:${e.name}`,
        ),
      ]),
    ),
    logRetention: settings.logRetentionDays,
    auth: { issuer: 'https://issuer.example.org', audience: ['cost'] },
    throttle: { rateLimit: 1, burstLimit: 1 },
  });
  const format = (built.stage.node.defaultChild as CfnStage).accessLogSettings as { format?: string };
  if (!format?.format) throw new Error('lib/http-api.ts no longer writes access logs: update the cost model');
  return format.format;
}
const ACCESS_LOG_FORMAT = accessLogFormat();

/** Reads the meter's records as they are appended. */
class MeterReader {
  private offset = 0;
  constructor(readonly file: string) {}
  take(): MeterRecord[] {
    if (!existsSync(this.file)) return [];
    const buf = readFileSync(this.file);
    const end = buf.lastIndexOf(10) + 1;
    if (end <= this.offset) return [];
    const text = buf.subarray(this.offset, end).toString('utf8');
    this.offset = end;
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as MeterRecord);
  }
}

/**
 * Reads whose units DynamoDB Local reported differently from the items it returned (printed at the end; the usage
 * takes the computed units, see local/meter.ts).
 */
const readMismatches: DdbRecord[] = [];

/**
 * The billable usage of the records, keeping the invocations `keep` accepts and whatever they caused; with
 * `onlyTagged`, requests made outside any kept invocation (a client following a redirect) are left out too.
 */
function usageOf(
  records: MeterRecord[],
  keep: (r: InvokeRecord) => boolean = () => true,
  onlyTagged = false,
): Usage {
  const u: Usage = {};
  const bump = (k: string, v: number) => {
    u[k] = (u[k] ?? 0) + v;
  };
  const dropped = new Set<string>();
  const kept = new Set<string>();
  for (const r of records) {
    if (r.k !== 'invoke') continue;
    if (!keep(r)) {
      dropped.add(r.id);
      continue;
    }
    kept.add(r.id);
    const fn = FUNCTION_NAMES.get(r.entry) ?? r.entry;
    bump(`lambda.${fn}.invocations`, 1);
    bump(`lambda.${fn}.ms`, Math.ceil(r.ms));
    bump(`lambda.${fn}.logBytes`, r.logBytes + lambdaPlatformLogBytes(r.ms, MEMORY_MB));
    if (r.api) {
      bump('api.requests', 1);
      bump('api.units', Math.max(1, Math.ceil((r.api.requestBytes + r.api.responseBytes) / (512 * 1024))));
      bump('api.responseBytes', r.api.responseBytes);
      bump(
        'api.accessLogBytes',
        Buffer.byteLength(
          accessLogLine(ACCESS_LOG_FORMAT, {
            httpMethod: r.api.method,
            routeKey: r.api.routeKey,
            path: r.api.path,
            status: r.api.status,
            responseLength: r.api.responseBytes,
            responseLatency: Math.ceil(r.ms),
          }),
        ),
      );
    }
  }
  for (const r of records) {
    if (r.k === 'invoke' || (r.inv && dropped.has(r.inv))) continue;
    if (onlyTagged && !(r.inv && kept.has(r.inv))) continue;
    if (r.k === 'ddb') {
      bump('ddb.rru', r.read);
      bump('ddb.wru', r.write);
      if (r.failed) bump('ddb.failedWrites', 1);
      if (r.computedRead !== undefined && Math.abs(r.computedRead - r.localUnits) > 1e-9)
        readMismatches.push(r);
    } else if (r.k === 's3') {
      if (r.tier !== 'free') bump(`s3.${r.tier}`, 1);
      if (!r.inv && r.method === 'GET') bump('s3.clientBytes', r.bytesOut);
    } else if (r.k === 'sns') {
      bump('sns.messages', r.messages);
      bump('sns.requests', Math.max(1, Math.ceil(r.bytes / (64 * 1024))));
    }
  }
  return u;
}

/** Invocations whose log lines make up the sample that measures how well the logs compress. */
const logSample: MeterRecord[] = [];

/**
 * gzip size / raw size of a log stream like the deployment's: every sampled invocation's START/END/REPORT lines
 * (fresh request ids), its access-log line, and the handlers' own log text the meter kept.
 */
function compressionRatio(handlerLogText: Buffer): number {
  const parts: string[] = [];
  for (const r of logSample) {
    if (r.k !== 'invoke') continue;
    parts.push(lambdaPlatformLog(r.ms, MEMORY_MB, randomUUID()));
    if (r.api)
      parts.push(
        `${accessLogLine(ACCESS_LOG_FORMAT, {
          requestId: randomBytes(12).toString('base64'),
          httpMethod: r.api.method,
          routeKey: r.api.routeKey,
          path: r.api.path,
          status: r.api.status,
          responseLength: r.api.responseBytes,
          responseLatency: Math.ceil(r.ms),
          requestTime: new Date(r.at).toUTCString(),
        })}\n`,
      );
  }
  const raw = Buffer.concat([Buffer.from(parts.join('')), handlerLogText]);
  return raw.length ? gzipSync(raw).length / raw.length : 1;
}

/** Transitions and execution-log bytes of a release's executions, as AWS would record them. */
function sfnUsage(history: HistoryEvent[]): Usage {
  const arn = (name: string) => `arn:aws:states:us-east-1:123456789012:execution:${STATE_MACHINE}:${name}`;
  const execution = arn('RE_ABCDEFGH-g0');
  let transitions = 0;
  let logBytes = 0;
  for (const e of history) {
    if (e.type === 'ExecutionStarted' || e.type?.startsWith('Execution'))
      logBytes += sfnLogRecordBytes(execution, e.type ?? '', '');
    if (!e.type?.endsWith('StateEntered')) continue;
    transitions++;
    const name = e.stateEnteredEventDetails?.name ?? '';
    const state = definition.States[name] ?? { Type: 'Pass' };
    logBytes += historyEventsPerEntry(state) * sfnLogRecordBytes(execution, e.type, name);
  }
  return { 'sfn.transitions': transitions, 'sfn.logBytes': logBytes };
}

/** DynamoDB's billed storage of every table: item bytes + 100 per item, and the same again per index entry. */
async function storedBytes(stack: StackEndpoints): Promise<number> {
  const client = new DynamoDBClient({
    endpoint: stack.dynamodb,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  let bytes = 0;
  try {
    for (const def of Object.values(TABLES)) {
      const table = tableEnv('local')[def.envVar];
      let start: Record<string, any> | undefined;
      do {
        const page = await client.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
        for (const item of page.Items ?? []) {
          const size = itemSize(item) + 100;
          bytes += size;
          for (const index of def.indexes) if (item[index.partitionKey.name]) bytes += size;
        }
        start = page.LastEvaluatedKey;
      } while (start);
    }
  } finally {
    client.destroy();
  }
  return bytes;
}

/** Waits (on the unmetered Step Functions endpoint) until the release's execution has entered `state`. */
async function untilState(ctx: ReleaseCtx, releaseId: string, state: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const h = await releaseHistory(ctx, releaseId);
    if (h.some((e) => e.stateEnteredEventDetails?.name === state)) return;
    if (Date.now() > deadline) throw new Error(`release ${releaseId} never reached ${state}`);
    await sleep(200);
  }
}

/** Waits until every execution of the release has ended. */
async function untilDone(ctx: ReleaseCtx, releaseId: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const h = await releaseHistory(ctx, releaseId);
    const started = h.filter((e) => e.type === 'ExecutionStarted').length;
    const ended = h.filter((e) => /^Execution(Succeeded|Failed|Aborted|TimedOut)$/.test(e.type ?? '')).length;
    if (started > 0 && ended === started) return;
    if (Date.now() > deadline) throw new Error(`release ${releaseId} still running`);
    await sleep(200);
  }
}

const withMeteredStack = async (
  meterFile: string,
  env: Record<string, string>,
  fn: (ctx: ReleaseCtx, meter: MeterReader) => Promise<void>,
) => {
  const stack = await benchStack({
    LOCAL_METER_FILE: meterFile,
    LOG_LEVEL: deployedLogLevel(settings),
    POLL_SECONDS: String(LOCAL_POLL_SECONDS),
    ACTION_TIMEOUT_SECONDS: String(settings.actionTimeoutSeconds),
    SIGNED_URL_TTL_SECONDS: '300',
    ...env,
  });
  const sfn = sfnClient(stack);
  try {
    await fn(await releaseCtx(stack, sfn), new MeterReader(meterFile));
  } catch (err) {
    say(stack.tail());
    throw err;
  } finally {
    sfn.destroy();
    await stack.stop();
  }
};

interface ReleasePoint {
  N: number;
  P: number;
  stagePolls: number;
  usage: Usage;
}

async function measureRelease(
  ctx: ReleaseCtx,
  meter: MeterReader,
  n: number,
  stagePolls: number,
): Promise<{ point: ReleasePoint; bytes: number }> {
  const services = await startFakeFleet(n, { name: 'cost', stagePolls, publishPolls: 1 });
  const ids: string[] = [];
  try {
    for (const [i, url] of services.urls.entries())
      ids.push(await registerService(ctx, `cost-${n}x${stagePolls}-${i}`, url));
    const before = await storedBytes(ctx.stack);
    meter.take();
    const id = await createRelease(ctx, `cost ${n} x ${stagePolls}`);
    const limit = 120_000 + stagePolls * LOCAL_POLL_SECONDS * 3000;
    await untilState(ctx, id, 'WaitForPublish', limit);
    await api(ctx, 'POST', `/releases/${id}/publish`);
    await untilDone(ctx, id, limit);
    await sleep(500);
    const records = meter.take();
    logSample.push(...records);
    if (process.env.COST_DEBUG)
      for (const r of records)
        if (r.k === 'ddb')
          say(`    ${r.op} read ${r.read} write ${r.write} local ${r.localUnits} ${r.failed ?? ''}`);
    const history = await releaseHistory(ctx, id);
    const state = (await api(ctx, 'GET', `/releases/${id}`)).state;
    if (state !== 'published') throw new Error(`release ${id} ended ${state}, not published`);
    const usage = add(usageOf(records), sfnUsage(history));
    const P = history.filter((e) => e.stateEnteredEventDetails?.name === 'Poll').length;
    const bytes = (await storedBytes(ctx.stack)) - before;
    say(
      `  N=${n} stagePolls=${stagePolls}: ${P} poll rounds, ${usage['sfn.transitions']} transitions, ` +
        `${usage['ddb.rru'] ?? 0} RRU, ${usage['ddb.wru'] ?? 0} WRU, ${bytes} bytes stored`,
    );
    return { point: { N: n, P, stagePolls, usage }, bytes };
  } finally {
    await disableServices(ctx, ids);
    await services.stop();
  }
}

async function measureCallbacks(ctx: ReleaseCtx, meter: MeterReader) {
  const fakes = await registerFakes(ctx, 10, 0.5);
  try {
    meter.take();
    const id = await createRelease(ctx, 'cost callbacks');
    await waitFor(ctx, id, ['staged'], 60_000, 250);
    await api(ctx, 'POST', `/releases/${id}/publish`);
    await waitFor(ctx, id, ['published'], 60_000, 250);
    await untilDone(ctx, id, 60_000);
    await sleep(500);
    const isCallback = (r: InvokeRecord) => r.api?.method === 'PATCH' && r.api.routeKey.includes('/tasks');
    const records = meter.take();
    logSample.push(...records);
    const count = records.filter((r) => r.k === 'invoke' && isCallback(r)).length;
    if (count === 0) throw new Error('no PATCH /tasks callback was recorded');
    // PhaseWatch runs because of the callbacks (it reads the view when one completes its group, and wakes the
    // release): its invocations and requests are part of what a callback costs.
    const isPhaseWatch = (r: InvokeRecord) => r.entry.endsWith('handlers/phase-watch.ts');
    const usage = scale(
      usageOf(records, (r) => isCallback(r) || isPhaseWatch(r), true),
      1 / count,
    );
    // What one callback asks of DynamoDB: its requests (round trips) and the write units they cost.
    const callbackIds = new Set(
      records.filter((r) => r.k === 'invoke' && isCallback(r)).map((r) => (r as InvokeRecord).id),
    );
    const ddb = records.filter(
      (r): r is DdbRecord => r.k === 'ddb' && r.inv !== undefined && callbackIds.has(r.inv),
    );
    const byOp = new Map<string, number>();
    for (const r of ddb) byOp.set(r.op, (byOp.get(r.op) ?? 0) + 1);
    const watchIds = new Set(
      records.filter((r) => r.k === 'invoke' && isPhaseWatch(r)).map((r) => (r as InvokeRecord).id),
    );
    const watchDdb = records.filter((r) => r.k === 'ddb' && r.inv !== undefined && watchIds.has(r.inv));
    say(
      `  ${count} callbacks; each: ${(ddb.length / count).toFixed(2)} DynamoDB requests ` +
        `(${[...byOp].map(([op, n]) => `${op} ${(n / count).toFixed(2)}`).join(', ')}); ` +
        `PhaseWatch per callback: ${(watchIds.size / count).toFixed(2)} invocations, ` +
        `${(watchDdb.length / count).toFixed(2)} DynamoDB requests; together ` +
        `${(usage['ddb.wru'] ?? 0).toFixed(1)} write units, ${(usage['ddb.rru'] ?? 0).toFixed(1)} read units`,
    );
    return { usage, measuredCallbacks: count };
  } finally {
    await retire(ctx, fakes);
  }
}

async function uploadFile(stack: StackEndpoints, token: string, studyId: string, bytes: Buffer) {
  const auth = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
  const created: any = await (
    await fetch(`${stack.files}/studies/${studyId}/files`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        file_name: `cost-${bytes.length}.bin`,
        size: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
      }),
    })
  ).json();
  const put = await fetch(created.upload.url, {
    method: 'PUT',
    body: bytes,
    headers: created.upload.headers,
  });
  if (put.status !== 200) throw new Error(`upload answered ${put.status}`);
  const confirm = await fetch(created.confirm_url, { method: 'POST', headers: auth, body: '{}' });
  if (confirm.status !== 200) throw new Error(`confirm answered ${confirm.status}: ${await confirm.text()}`);
  return { fileId: created.file.kf_id as string };
}

async function measureDownloads(ctx: ReleaseCtx, meter: MeterReader) {
  const studyId = ctx.studies[0];
  const small = await uploadFile(ctx.stack, ctx.admin, studyId, randomBytes(SMALL_BYTES));
  const large = await uploadFile(ctx.stack, ctx.admin, studyId, randomBytes(LARGE_BYTES));
  const bearer = { Authorization: `Bearer ${ctx.admin}` };
  const path = (fileId: string) => `/study/${studyId}/file/${fileId}`;
  const expect = async (res: Response, status: number, what: string) => {
    await res.arrayBuffer();
    if (res.status !== status) throw new Error(`${what} answered ${res.status}, not ${status}`);
    return res;
  };
  const follow = async (res: Response, what: string) => {
    const location = res.headers.get('location');
    if (!location) throw new Error(`${what}: no Location`);
    await expect(await fetch(location), 200, `${what} -> S3`);
  };
  const kinds: Record<'bearer-direct' | 'signed-url' | 'redirect', () => Promise<void>> = {
    'bearer-direct': async () => {
      await expect(
        await fetch(`${ctx.stack.files}/download${path(small.fileId)}`, { headers: bearer }),
        200,
        'direct download',
      );
    },
    'signed-url': async () => {
      const minted = await fetch(`${ctx.stack.files}/signed-url${path(large.fileId)}`, {
        method: 'POST',
        headers: bearer,
      });
      if (minted.status !== 200) throw new Error(`mint answered ${minted.status}`);
      const { url } = (await minted.json()) as { url: string };
      await follow(await expect(await fetch(url, { redirect: 'manual' }), 302, 'claim'), 'claim');
    },
    redirect: async () => {
      const res = await fetch(`${ctx.stack.files}/download${path(large.fileId)}`, {
        headers: bearer,
        redirect: 'manual',
      });
      await follow(await expect(res, 302, 'redirect download'), 'redirect download');
    },
  };
  const out: Record<string, Usage> = {};
  let auditBytes = 0;
  for (const [kind, run] of Object.entries(kinds)) {
    const before = await storedBytes(ctx.stack);
    meter.take();
    for (let i = 0; i < DOWNLOADS; i++) await run();
    await sleep(300);
    const records = meter.take();
    logSample.push(...records);
    out[kind] = scale(usageOf(records), 1 / DOWNLOADS);
    auditBytes += ((await storedBytes(ctx.stack)) - before) / DOWNLOADS;
    say(`  ${kind}: ${JSON.stringify(out[kind])}`);
  }
  return {
    downloads: out as CostProfile['downloads'],
    bytesPerDownload: auditBytes / Object.keys(kinds).length,
  };
}

/** The scheduled functions on a stack of their own, through phases of services, releases in flight and studies. */
async function measureSchedules(meterFile: string): Promise<CostProfile['schedules']> {
  const dir = mkdtempSync(join(tmpdir(), 'cost-studies-'));
  const source = join(dir, 'studies.json');
  const sample = JSON.parse(readFileSync(resolve(ROOT, 'local/studies.sample.json'), 'utf8'));
  const writeStudies = (n: number) => {
    const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    const extra = Array.from({ length: Math.max(0, n - sample.results.length) }, (_, i) => ({
      ...sample.results[0],
      kf_id: `SD_C0ST${alphabet[Math.floor(i / 32) % 32]}${alphabet[i % 32]}${alphabet[(i * 7) % 32]}${alphabet[(i * 13) % 32]}`,
      name: `Cost model study ${i}`,
    }));
    const results = [...sample.results, ...extra].slice(0, n);
    writeFileSync(source, JSON.stringify({ ...sample, total: results.length, results }));
  };
  writeStudies(sample.results.length);
  const runs: { x: Record<string, number>; usage: Usage; fn: string }[] = [];
  const phase = { S: 0, A: 0, studies: sample.results.length };
  const PHASE_MS = Number(process.env.COST_PHASE_SECONDS ?? 26) * 1000;
  try {
    await withMeteredStack(
      meterFile,
      {
        HEALTH_INTERVAL_SECONDS: '4',
        RECONCILE_SECONDS: '4',
        STUDY_SYNC_SECONDS: '6',
        STUDIES_SOURCE: source,
        POLL_SECONDS: '3600',
      },
      async (ctx, meter) => {
        const observe = async (label: string) => {
          meter.take();
          await sleep(PHASE_MS);
          const records = meter.take();
          const seen = new Set<string>();
          for (const r of records) {
            if (r.k !== 'invoke' || r.trigger !== 'schedule') continue;
            const fn = FUNCTION_NAMES.get(r.entry) ?? r.entry;
            // The first run of each function in a phase meets the change itself (new services, new studies).
            if (!seen.has(fn)) {
              seen.add(fn);
              continue;
            }
            runs.push({ fn, x: { ...phase }, usage: usageOf(records, (i) => i.id === r.id, true) });
          }
          say(`  ${label}: ${runs.length} runs so far`);
        };
        await observe('S=0, A=0');
        const services = await startFakeFleet(10, { name: 'cost-health', stagePolls: 1e9 });
        try {
          for (const [i, url] of services.urls.entries()) await registerService(ctx, `cost-health-${i}`, url);
          phase.S = 10;
          await observe('S=10, A=0');
          for (let i = 0; i < 5; i++) await createRelease(ctx, `cost in flight ${i}`);
          phase.A = 5;
          await observe('S=10, A=5');
          writeStudies(50);
          phase.studies = 50;
          await observe('S=10, A=5, 50 studies');
        } finally {
          await services.stop();
        }
      },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const terms = ['1', 'S', 'A', 'studies'];
  const values = (x: Record<string, number>) => [1, x.S, x.A, x.studies];
  const out: Record<string, ReturnType<typeof fitUsage>> = {};
  for (const fn of ['HealthCheck', 'Reconciler', 'StudySync']) {
    const mine = runs.filter((r) => r.fn === fn);
    if (new Set(mine.map((r) => JSON.stringify(r.x))).size < 4)
      throw new Error(`${fn}: runs in fewer than 4 phases; raise COST_PHASE_SECONDS`);
    out[fn] = fitUsage(terms, values, mine);
  }
  return out as CostProfile['schedules'];
}

function gitCommit(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain'], { cwd: ROOT, encoding: 'utf8' }).trim();
    return dirty ? `${sha} (with uncommitted changes)` : sha;
  } catch {
    return 'unknown';
  }
}

/**
 * The profile this run replaces (OUT, if any): its callback's write units are printed beside this run's, so the
 * change a version makes to a callback's cost is read in one place.
 */
function previousCallback(): { wru: number; rru: number; measured: string } | null {
  if (!existsSync(OUT)) return null;
  try {
    const old = JSON.parse(readFileSync(OUT, 'utf8')) as Partial<CostProfile>;
    const usage = old.callback?.usage;
    if (!usage) return null;
    return {
      wru: usage['ddb.wru'] ?? 0,
      rru: usage['ddb.rru'] ?? 0,
      measured: `${old.measured?.date ?? '?'}, commit ${old.measured?.commit?.slice(0, 7) ?? '?'}`,
    };
  } catch {
    return null;
  }
}

async function main() {
  const t0 = Date.now();
  const commit = gitCommit();
  const before = previousCallback();
  const work = mkdtempSync(join(tmpdir(), 'cost-meter-'));
  const points: ReleasePoint[] = [];
  const stored: { x: Record<string, number>; usage: Usage }[] = [];
  let callback: CostProfile['callback'] | undefined;
  let downloads: Awaited<ReturnType<typeof measureDownloads>> | undefined;
  try {
    say('releases, callbacks and downloads (one stack):');
    await withMeteredStack(
      join(work, 'main.jsonl'),
      { HEALTH_INTERVAL_SECONDS: '86400', RECONCILE_SECONDS: '86400', STUDY_SYNC_SECONDS: '86400' },
      async (ctx, meter) => {
        for (const n of SERVICES)
          for (const p of POLLS) {
            const { point, bytes } = await measureRelease(ctx, meter, n, p);
            points.push(point);
            stored.push({ x: { N: n, P: point.P }, usage: { bytes } });
          }
        say('callbacks:');
        callback = await measureCallbacks(ctx, meter);
        const now = callback.usage;
        say(
          `  write units per callback: before ${before ? `${before.wru.toFixed(1)} (${relative(ROOT, OUT)} of ${before.measured})` : 'unknown (no earlier profile)'}, ` +
            `after ${(now['ddb.wru'] ?? 0).toFixed(1)}; read units ${before ? before.rru.toFixed(1) : '?'} -> ${(now['ddb.rru'] ?? 0).toFixed(1)}`,
        );
        say('downloads:');
        downloads = await measureDownloads(ctx, meter);
      },
    );
    say('schedules (a second stack):');
    const schedules = await measureSchedules(join(work, 'schedules.jsonl'));
    const logText = readFileSync(join(work, 'main.jsonl.logs'));
    if (!callback || !downloads) throw new Error('a scenario did not run');
    const releaseTerms = ['1', 'N', 'P', 'N*P'];
    const releaseValues = (x: Record<string, number>) => [1, x.N, x.P, x.N * x.P];
    const profile: CostProfile = {
      version: 1,
      measured: {
        date: new Date().toISOString(),
        commit,
        machine: machineInfo(),
        durationSeconds: Math.round((Date.now() - t0) / 1000),
      },
      settings: {
        functionMemoryMb: MEMORY_MB,
        logLevel: deployedLogLevel(settings),
        localPollSeconds: LOCAL_POLL_SECONDS,
        stateMachineName: STATE_MACHINE,
      },
      release: {
        fit: fitUsage(
          releaseTerms,
          releaseValues,
          points.map((p) => ({ x: { N: p.N, P: p.P }, usage: p.usage })),
        ),
        points,
        studiesPerRelease: 2,
      },
      callback,
      downloads: downloads.downloads,
      downloadFiles: { directBytes: SMALL_BYTES, redirectBytes: LARGE_BYTES, repetitions: DOWNLOADS },
      schedules,
      logs: {
        compressionRatio: Number(compressionRatio(logText).toFixed(4)),
      },
      storage: {
        bytesPerRelease: fitUsage(releaseTerms, releaseValues, stored),
        bytesPerDownload: Math.round(downloads.bytesPerDownload),
      },
    };
    writeFileSync(OUT, `${JSON.stringify(profile, null, 2)}\n`);
    say(
      readMismatches.length
        ? `reads where DynamoDB Local's units differ from the items returned: ${readMismatches
            .slice(0, 10)
            .map((r) => `${r.op} ${r.localUnits} vs ${r.computedRead}`)
            .join('; ')} (${readMismatches.length} in all)`
        : 'every whole-item read: DynamoDB Local units = units computed from the items returned',
    );
    say(`wrote ${OUT} in ${profile.measured.durationSeconds} s`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`cost:measure failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
