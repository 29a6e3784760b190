/**
 * `npm run bench:soak`: 20 releases at a time over 50 task services, in a loop (create -> staged -> publish ->
 * published, then the next), for SOAK_MINUTES (30) on a local stack of its own (bench/lib/stack.ts), with the
 * health check and the reconciler running every minute as deployed.
 *
 * Every minute it samples the resident memory (VmRSS in /proc) of the stack's Node process (DATA_DIR/local.pid) and
 * of its DynamoDB Local JVM (the stack's java child), the machine's load, and the p99 latency of each action in that
 * minute: POST /releases, GET /releases/<id> (the watching), POST /releases/<id>/publish, the task services' PATCH
 * /tasks/<id> callbacks, and the create -> staged and publish -> published times.
 *
 * Targets: 0 releases stuck (a release that is not terminal within SOAK_STUCK_SECONDS, or still not terminal when
 * the run has drained, is stuck; releases that end failed or canceled are listed with the event that caused it),
 * 0 answers >= 500 (with the errors the stack logged for any), and memory flat:
 * after the warm-up, the mean of the last window is within 10% of the mean of the first, for Node and for the JVM;
 * the windows are 10 minutes, or half of what follows the warm-up if that is shorter. The least-squares slope after
 * the warm-up is reported too.
 *
 * The warm-up: the local Step Functions endpoint keeps closed executions for their histories, a cache bounded by
 * count (SFN_KEEP_CLOSED, 2000 by default, which this load would fill only after 40 minutes or more). The soak sets it
 * to 100, and the warm-up lasts until that many releases have ended (and at least SOAK_WARMUP_MINUTES, default a fifth
 * of the run, at least 2), so what is compared afterwards is the code, not the cache filling.
 *
 * Settings: SOAK_MINUTES (30), SOAK_RELEASES (20), SOAK_SERVICES (50), SOAK_WORK_SECONDS (2: staging and publishing
 * each take that long at every task service), SOAK_POLL_SECONDS (5, the functions' default), SOAK_WARMUP_MINUTES,
 * SOAK_STUCK_SECONDS (300), BENCH_WRITE_DOCS (true).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { ROOT } from '#local/config.js';
import {
  ACTIVE,
  type ApiAnswer,
  apiCall,
  type ReleaseCtx,
  registerFakes,
  releaseEvents,
  retire,
  sleep,
  TERMINAL,
  withStack,
} from './lib/releases.js';
import { fmt, machineInfo, writeSection } from './lib/report.js';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 30);
const RELEASES = Number(process.env.SOAK_RELEASES ?? 20);
const SERVICES = Number(process.env.SOAK_SERVICES ?? 50);
const WORK_SECONDS = Number(process.env.SOAK_WORK_SECONDS ?? 2);
const POLL_SECONDS = Number(process.env.SOAK_POLL_SECONDS ?? 5);
const MIN_WARMUP = Number(process.env.SOAK_WARMUP_MINUTES ?? Math.max(2, Math.round(MINUTES / 5)));
const KEEP_CLOSED = Number(process.env.SFN_KEEP_CLOSED ?? 100);
const STUCK_MS = Number(process.env.SOAK_STUCK_SECONDS ?? 300) * 1000;
const WRITE_DOCS = process.env.BENCH_WRITE_DOCS !== 'false';
const WATCH_MS = 1000;

const say = (line: string) => process.stdout.write(`${line}\n`);

type Action = 'create' | 'get' | 'publish' | 'callback' | 'staged' | 'published';

/** What happened within one minute. */
class Minute {
  readonly samples: Record<Action, number[]> = {
    create: [],
    get: [],
    publish: [],
    callback: [],
    staged: [],
    published: [],
  };
  fiveXx = 0;
  errors = 0;
  /** Releases published in this minute. */
  done = 0;
  /** Releases that reached any terminal state in this minute (each closes an execution). */
  ended = 0;
  add(action: Action, ms: number) {
    this.samples[action].push(ms);
  }
}

const p99 = (xs: number[]) => {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)];
};

/** Resident memory of a process in MB (VmRSS), or NaN when it is gone. */
function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** The java process among the descendants of `pid` (DynamoDB Local, started by the stack). */
function javaChild(pid: number): number | undefined {
  const parents = new Map<number, number>();
  const names = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      names.set(Number(entry), stat.slice(stat.indexOf('(') + 1, close));
      parents.set(Number(entry), Number(stat.slice(close + 2).split(' ')[1]));
    } catch {
      // exited meanwhile
    }
  }
  const descends = (p: number): boolean => {
    for (let cur = parents.get(p); cur && cur > 1; cur = parents.get(cur)) if (cur === pid) return true;
    return false;
  };
  return [...names].find(([p, name]) => name === 'java' && descends(p))?.[0];
}

interface Row {
  minute: number;
  done: number;
  ended: number;
  create: number;
  get: number;
  publish: number;
  callback: number;
  staged: number;
  published: number;
  fiveXx: number;
  errors: number;
  nodeMb: number;
  jvmMb: number;
  load: number;
}

/**
 * What the stack logged as errors, counted by kind: the first line of each `local api error` (an API call answered
 * 500) and the message of each error-level JSON line. Empty for a stack the soak did not start.
 */
function stackLogErrors(ctx: ReleaseCtx): string[] {
  const file = ctx.stack.dataDir ? join(ctx.stack.dataDir, 'stack.log') : '';
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const counts = new Map<string, number>();
  const bump = (k: string) => counts.set(k, (counts.get(k) ?? 0) + 1);
  for (const line of text.split('\n')) {
    if (line.startsWith('local api error:')) bump(line.slice(0, 160));
    else if (line.startsWith('{') && line.includes('"level":"error"')) {
      try {
        const j = JSON.parse(line) as { message?: string; error?: string };
        bump(`error: ${j.message ?? ''}${j.error ? ` (${String(j.error).slice(0, 120)})` : ''}`);
      } catch {
        bump(line.slice(0, 160));
      }
    }
  }
  return [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${n} × ${k}`);
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const mx = mean(xs);
  const my = mean(ys);
  const num = xs.reduce((s, x, i) => s + (x - mx) * (ys[i] - my), 0);
  const den = xs.reduce((s, x) => s + (x - mx) ** 2, 0);
  return den ? num / den : 0;
}

async function soak(ctx: ReleaseCtx) {
  const pidFile = ctx.stack.dataDir ? join(ctx.stack.dataDir, 'local.pid') : undefined;
  const stackPid = pidFile ? Number(readFileSync(pidFile, 'utf8')) : Number.NaN;
  if (!Number.isInteger(stackPid)) throw new Error('no stack pid: set BENCH_DATA_DIR for a running stack');
  const jvmPid = javaChild(stackPid);
  if (!jvmPid) throw new Error(`no java process under the stack (pid ${stackPid})`);
  say(`stack pid ${stackPid}, DynamoDB Local pid ${jvmPid}`);

  say(`registering ${SERVICES} fake task services...`);
  const fakes = await registerFakes(ctx, SERVICES, WORK_SECONDS);
  let current = new Minute();
  const rows: Row[] = [];
  const created: string[] = [];
  const stuck: string[] = [];
  const ended = new Map<string, number>();
  const start = Date.now();
  const deadline = start + MINUTES * 60_000;

  const call = async (action: Action, method: string, path: string, body?: unknown): Promise<ApiAnswer> => {
    try {
      const r = await apiCall(ctx, method, path, body);
      current.add(action, r.ms);
      if (r.status >= 500) current.fiveXx++;
      return r;
    } catch (err) {
      current.errors++;
      throw err;
    }
  };

  /** Watches a release until it is in one of `states` or terminal; undefined when it does not get there in time. */
  const until = async (id: string, states: string[], since: number): Promise<string | undefined> => {
    for (;;) {
      const r = await call('get', 'GET', `/releases/${id}`);
      const state = r.status === 200 ? (r.body.state as string) : undefined;
      if (state && (states.includes(state) || TERMINAL.includes(state))) return state;
      if (Date.now() - since > STUCK_MS) return undefined;
      await sleep(WATCH_MS);
    }
  };

  const worker = async (w: number) => {
    // Spread the first creations over the first seconds, as releases would arrive.
    await sleep(w * 250);
    while (Date.now() < deadline) {
      const t0 = Date.now();
      const r = await call('create', 'POST', '/releases', {
        name: `soak ${w}`,
        description: 'soak',
        studies: ctx.studies,
        author: 'soak',
      });
      if (r.status !== 200) {
        await sleep(1000);
        continue;
      }
      const id = r.body.item_id as string;
      created.push(id);
      const staged = await until(id, ['staged'], t0);
      if (staged === undefined) {
        stuck.push(id);
        continue;
      }
      current.add('staged', Date.now() - t0);
      if (staged !== 'staged') {
        ended.set(id, 0);
        current.ended++;
        continue;
      }
      const t1 = Date.now();
      const pub = await call('publish', 'POST', `/releases/${id}/publish`);
      if (pub.status !== 200) {
        stuck.push(id);
        continue;
      }
      const end = await until(id, ['published'], t1);
      if (end === undefined) {
        stuck.push(id);
        continue;
      }
      current.add('published', Date.now() - t1);
      ended.set(id, end === 'published' ? 1 : 0);
      current.ended++;
      if (end === 'published') current.done++;
    }
  };

  const sampler = setInterval(() => {
    const m = current;
    current = new Minute();
    for (const f of fakes) {
      for (const c of f.fake.callbacks.splice(0)) {
        m.add('callback', c.ms);
        if (c.status >= 500) m.fiveXx++;
        if (c.status === 0) m.errors++;
      }
      // The fakes' own bookkeeping, so the soak's process does not grow with the run.
      f.fake.received.length = 0;
      f.fake.requests.length = 0;
      for (const [id, t] of f.fake.tasks)
        if (['published', 'canceled', 'failed'].includes(t.state)) f.fake.tasks.delete(id);
    }
    const row: Row = {
      minute: rows.length + 1,
      done: m.done,
      ended: m.ended,
      create: p99(m.samples.create),
      get: p99(m.samples.get),
      publish: p99(m.samples.publish),
      callback: p99(m.samples.callback),
      staged: p99(m.samples.staged),
      published: p99(m.samples.published),
      fiveXx: m.fiveXx,
      errors: m.errors,
      nodeMb: rssMb(stackPid),
      jvmMb: rssMb(jvmPid),
      load: loadavg()[0],
    };
    rows.push(row);
    say(tableRow(row));
  }, 60_000);

  say(header());
  try {
    await Promise.all(Array.from({ length: RELEASES }, (_, w) => worker(w)));
  } finally {
    clearInterval(sampler);
  }
  // Whatever is not terminal now, after every worker saw its release through or gave up on it, is stuck.
  const open: string[] = [];
  for (const state of ACTIVE) {
    const page = await apiCall(ctx, 'GET', `/releases?state=${state}&limit=100`);
    if (page.status !== 200) throw new Error(`GET /releases?state=${state} answered ${page.status}`);
    for (const r of page.body.results) open.push(`${r.item_id} (${state})`);
    for (let i = page.body.results.length; i < page.body.count; i++) open.push(`(one more ${state})`);
  }
  // Why each release that did not publish ended as it did: its state, its first error event (the cause) and how
  // many warnings followed (cancels that could not be delivered).
  const otherwise: string[] = [];
  for (const id of [...[...ended].filter(([, v]) => v === 0).map(([id]) => id), ...stuck]) {
    const release = await apiCall(ctx, 'GET', `/releases/${id}`);
    const evs = (await releaseEvents(ctx, id)).reverse();
    const cause = evs.find((e) => e.event_type === 'error');
    const warnings = evs.filter((e) => e.event_type === 'warning').length;
    otherwise.push(
      `${id} ${release.body?.state}: ${cause ? `${cause.created_at.slice(11, 19)} ${cause.message}` : 'no error event'}` +
        (warnings
          ? ` (then ${warnings} warnings: ${evs.find((e) => e.event_type === 'warning')?.message})`
          : ''),
    );
  }
  const callbacksLeft = fakes.flatMap((f) => f.fake.callbacks.splice(0));
  const stackErrors = stackLogErrors(ctx);
  await retire(ctx, fakes);
  return {
    rows,
    created: created.length,
    published: [...ended.values()].filter((v) => v === 1).length,
    notPublished: [...ended.values()].filter((v) => v === 0).length,
    stuck,
    open,
    otherwise,
    stackErrors,
    lateFiveXx: callbacksLeft.filter((c) => c.status >= 500).length + current.fiveXx,
    minutes: (Date.now() - start) / 60_000,
  };
}

function header(): string {
  return [
    '| minute | releases published | p99 POST /releases (ms) | p99 GET /releases/<id> (ms) | p99 POST publish (ms) | p99 PATCH /tasks callback (ms) | p99 create -> staged (s) | p99 publish -> published (s) | 5xx | request errors | Node RSS (MB) | JVM RSS (MB) | load (1 min) |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ].join('\n');
}

function tableRow(r: Row): string {
  const ms = (n: number) => (Number.isNaN(n) ? '–' : fmt(n));
  const s = (n: number) => (Number.isNaN(n) ? '–' : fmt(n / 1000, 1));
  return `| ${r.minute} | ${r.done} | ${ms(r.create)} | ${ms(r.get)} | ${ms(r.publish)} | ${ms(r.callback)} | ${s(r.staged)} | ${s(r.published)} | ${r.fiveXx} | ${r.errors} | ${fmt(r.nodeMb)} | ${fmt(r.jvmMb)} | ${fmt(r.load, 1)} |`;
}

/** Memory flatness after the warm-up: first and last windows' means, their ratio, and the slope. */
function flatness(rows: Row[], key: 'nodeMb' | 'jvmMb', warmup: number) {
  const after = rows.filter((r) => r.minute > warmup && !Number.isNaN(r[key]));
  if (after.length < 2)
    return { window: 0, first: Number.NaN, last: Number.NaN, change: Number.NaN, slopePerMinute: Number.NaN };
  const window = Math.max(1, Math.min(10, Math.floor(after.length / 2)));
  const first = mean(after.slice(0, window).map((r) => r[key]));
  const last = mean(after.slice(-window).map((r) => r[key]));
  return {
    window,
    first,
    last,
    change: first ? last / first - 1 : Number.NaN,
    slopePerMinute: slope(
      after.map((r) => r.minute),
      after.map((r) => r[key]),
    ),
  };
}

async function main() {
  await withStack(
    {
      POLL_SECONDS: String(POLL_SECONDS),
      ACTION_TIMEOUT_SECONDS: '15',
      SFN_KEEP_CLOSED: String(KEEP_CLOSED),
    },
    async (ctx) => {
      say(`soak: ${RELEASES} releases at a time x ${SERVICES} services for ${MINUTES} min`);
      const r = await soak(ctx);
      // The warm-up lasts at least MIN_WARMUP minutes and until the execution cache is full: the minute by whose
      // end as many releases had ended as the endpoint keeps closed executions.
      let ended = 0;
      let cacheFull = r.rows.length;
      for (const row of r.rows) {
        ended += row.ended;
        if (ended >= KEEP_CLOSED) {
          cacheFull = row.minute;
          break;
        }
      }
      const WARMUP = Math.max(MIN_WARMUP, cacheFull);
      const node = flatness(r.rows, 'nodeMb', WARMUP);
      const jvm = flatness(r.rows, 'jvmMb', WARMUP);
      const fiveXx = r.rows.reduce((n, x) => n + x.fiveXx, 0) + r.lateFiveXx;
      const errors = r.rows.reduce((n, x) => n + x.errors, 0);
      const stuck = r.stuck.length + r.open.length;
      const loads = r.rows.map((x) => x.load);
      // NaN when the run is no longer than its warm-up: nothing to compare, so not flat.
      const flat = (f: ReturnType<typeof flatness>) => Math.abs(f.change) <= 0.1;
      const pct = (n: number) => `${n >= 0 ? '+' : ''}${fmt(n * 100, 1)}%`;
      const memLine = (name: string, f: ReturnType<typeof flatness>) =>
        `| ${name} | ${fmt(f.first)} MB | ${fmt(f.last)} MB | ${pct(f.change)} | ${fmt(f.slopePerMinute, 2)} MB/min (${fmt(f.slopePerMinute * 60, 1)} MB/h) | ${flat(f) ? 'yes' : '**no**'} |`;
      const section = [
        '## Soak (`npm run bench:soak`)',
        '',
        machineInfo(),
        '',
        `${RELEASES} releases at a time over ${SERVICES} fake task services (test/helpers/fake-task-service/: staging and ` +
          `publishing take ${WORK_SECONDS} s each, then the service calls back with PATCH /tasks/<id>), each worker looping ` +
          `create -> staged -> publish -> published for ${fmt(r.minutes, 1)} minutes, on a local stack of its own ` +
          `(POLL_SECONDS=${POLL_SECONDS}, ACTION_TIMEOUT_SECONDS=15, the health check and the reconciler every minute, ` +
          `SFN_KEEP_CLOSED=${KEEP_CLOSED}). Each row is one minute: p99 of the calls made in it, memory sampled at its end ` +
          '(VmRSS of the stack’s Node process and of its DynamoDB Local JVM), 1-minute load average. ' +
          `Warm-up: the first ${WARMUP} minutes (at least ${MIN_WARMUP}, and until ${KEEP_CLOSED} releases had ended, ` +
          'which fills the endpoint’s cache of closed executions; meanwhile the JVM heap grows to its working size).',
        '',
        '| target | result | met |',
        '|---|---|---|',
        `| 0 releases stuck | ${stuck} stuck (not terminal within ${STUCK_MS / 1000} s, or at the end${r.open.length ? `: ${r.open.slice(0, 5).join(', ')}` : ''}) of ${r.created} created: ${r.published} published, ${r.notPublished} failed or canceled (below) | ${stuck === 0 ? 'yes' : '**no**'} |`,
        `| 0 5xx | ${fiveXx} answers >= 500 (and ${errors} requests without an answer) | ${fiveXx === 0 ? 'yes' : '**no**'} |`,
        `| memory flat (last window within 10% of the first, after warm-up) | Node ${pct(node.change)}, JVM ${pct(jvm.change)} (${node.window}-minute windows) | ${flat(node) && flat(jvm) ? 'yes' : '**no**'} |`,
        '',
        '| process | first window mean | last window mean | change | slope after warm-up | flat |',
        '|---|---:|---:|---:|---:|---|',
        memLine('stack (Node)', node),
        memLine('DynamoDB Local (JVM)', jvm),
        '',
        ...(r.otherwise.length
          ? [
              'Releases that were not published, with their error and warning events:',
              '',
              ...r.otherwise.map((o) => `- ${o}`),
              '',
            ]
          : []),
        ...(r.stackErrors.length
          ? [
              'Errors the stack logged (an API call answered 500 is a `local api error`):',
              '',
              ...r.stackErrors.slice(0, 10).map((e) => `- ${e}`),
              '',
            ]
          : []),
        `Machine load during the run (1-minute load average, 2 cores shared with other work): ${fmt(Math.min(...loads), 1)} to ${fmt(Math.max(...loads), 1)}, mean ${fmt(mean(loads), 1)}. Latencies move with it; the memory and the stuck and 5xx counts are the targets.`,
        '',
        header(),
        ...r.rows.map(tableRow),
      ].join('\n');
      if (WRITE_DOCS) writeSection(resolve(ROOT, 'docs/benchmarks.md'), 'bench:soak', section);
      say('');
      say(section);
      if (stuck > 0 || fiveXx > 0 || !flat(node) || !flat(jvm)) process.exitCode = 1;
    },
  );
}

main().catch((err) => {
  process.stderr.write(`bench:soak failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
