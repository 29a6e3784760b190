/**
 * `npm run bench:release`: releases on the local stack (`tsx bin/local.ts`: the real state machine in
 * aws-local-stepfunctions, the real handlers, DynamoDB Local) against fake task services over HTTP.
 *
 *   N = 1, 10, 50 task services × work that is instant or takes 2 s (staging and publishing each) × a poll interval
 *   of 1 s or 30 s, task services calling back (PATCH /tasks/<id>) when their work is done.
 *
 * Reported per release: start -> staged and publish -> published (from the release's own event timestamps), the
 * overhead over the ideal (the work time), and the state transitions of its execution (StateEntered events in the
 * local execution history, which is what Step Functions bills). Then one release of 500 services (BENCH_LARGE, instant
 * work: more tasks than one transaction holds, so its creation and every round take several), and 20 concurrent
 * releases × 50 services, after which every list's count is set against what paging through it finds.
 *
 * Targets (docs/benchmarks.md): transitions flat in N; overhead <= 1 s with callbacks even at a 30 s poll; the
 * concurrent run completes with no errors, and at a 1 s poll its staged p50 and published p50 are each at most
 * 2.5 × (work + floor), plain and faithful. Writes its section of docs/benchmarks.md (BENCH_WRITE_DOCS=false to
 * skip).
 */
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { ROOT } from '#local/config.js';
import { freePort } from '#local/dynamodb-local.js';
import { checkCounts, wrongCounts } from '#test/helpers/counts.js';
import { benchDocumentClient } from './lib/ddb-ceiling.js';
import {
  api,
  type Measured,
  type ReleaseCtx,
  registerFakes,
  retire,
  runRelease,
  sleep,
  withStack as withReleaseStack,
} from './lib/releases.js';
import { fmt, machineInfo, writeSection } from './lib/report.js';
import { waitForQuiet } from './lib/stack.js';
import { floorTable, minimalTransactionBurst } from './lib/tx-floor.js';

const WRITE_DOCS = process.env.BENCH_WRITE_DOCS !== 'false';
const SIZES = (process.env.BENCH_SIZES ?? '1,10,50').split(',').filter(Boolean).map(Number);
const WORKS = (process.env.BENCH_WORK_SECONDS ?? '0,2').split(',').map(Number);
const POLLS = (process.env.BENCH_POLL_SECONDS ?? '1,30').split(',').map(Number);
const CONCURRENT = Number(process.env.BENCH_CONCURRENT_RELEASES ?? 20);
const CONCURRENT_SERVICES = Number(process.env.BENCH_CONCURRENT_SERVICES ?? 50);
/** The one large release (0 s of work); 0 skips it. */
const LARGE = Number(process.env.BENCH_LARGE ?? 500);
/** The bound on both ratios of the concurrent run at a 1 s poll. */
const RATIO_TARGET = 2.5;
/** The conflict-faithful run of the concurrent releases (DYNAMODB_FAITHFUL's modes); empty skips it. */
const FAITHFUL = process.env.BENCH_FAITHFUL ?? 'conflicts,throttle';

const say = (line: string) => process.stdout.write(`${line}\n`);
const secs = (ms: number) => fmt(ms / 1000, 2);

type Ctx = ReleaseCtx;
const services = registerFakes;

function withStack(pollSeconds: number, fn: (ctx: Ctx) => Promise<void>, env: Record<string, string> = {}) {
  return withReleaseStack(
    {
      POLL_SECONDS: String(pollSeconds),
      ACTION_TIMEOUT_SECONDS: '15',
      HEALTH_INTERVAL_SECONDS: '3600',
      // The plain runs meet DynamoDB Local as it is, whatever the benchmark's own environment says.
      DYNAMODB_FAITHFUL: '',
      ...env,
    },
    fn,
  );
}

interface Concurrent {
  poll: number;
  faithful: string;
  row: string;
  note: string;
  ratio: string;
  /** Both ratios within RATIO_TARGET. */
  met: boolean;
  /** Lists whose count differs from what paging found (none when the counts are exact). */
  wrong: string[];
}

/**
 * The lists whose counts the concurrent run checks: the unfiltered ones and those of every release, task service
 * and state, and the per-task lists of one release's tasks (all 1,000 tasks' would take thousands of pages).
 */
async function countedLists(ctx: Ctx, releaseIds: string[]): Promise<string[]> {
  const services = (await api(ctx, 'GET', '/task-services?limit=100')).results.map((s: any) => s.item_id);
  const first = releaseIds[0] ? (await api(ctx, 'GET', `/releases/${releaseIds[0]}`)).tasks : [];
  return [
    '/events',
    '/tasks',
    '/releases',
    ...['pending', 'running', 'staged', 'publishing', 'published'].map((s) => `/tasks?state=${s}`),
    ...releaseIds.map((r) => `/events?release=${r}`),
    ...services.flatMap((s: string) => [`/events?task_service=${s}`, `/tasks?task_service=${s}`]),
    ...first.flatMap((t: any) => [
      `/events?task=${t.item_id}`,
      `/events?task=${t.item_id}&release=${releaseIds[0]}`,
    ]),
  ];
}

/**
 * CONCURRENT releases of CONCURRENT_SERVICES services at once, each published as soon as it is staged; then, on the
 * same DynamoDB Local, the floor of a burst of as many callbacks (bench/lib/tx-floor.ts) for the same-run ratio
 * staged p50 / (work + floor). With the conflict-faithful proxy (`faithful`), what it refused per callback too.
 */
async function concurrentRun(ctx: Ctx, poll: number, faithful: string, proxy?: string): Promise<Concurrent> {
  const work = 2;
  const loadBefore = loadavg()[0];
  const fakes = await services(ctx, CONCURRENT_SERVICES, work);
  const refusedBefore = proxy ? await refusals(proxy) : 0;
  const t0 = Date.now();
  const results = await Promise.all(
    Array.from({ length: CONCURRENT }, () =>
      // Watched every second: 20 watchers at 10/s would be load of their own. Each phase may take up to 3 minutes:
      // on a slow or shared host 1,000 tasks take far longer than one release's limit, and a release given up on
      // measures nothing.
      runRelease(ctx, work, poll, 1000, 180_000).catch((err: Error) => ({ error: err.message }) as const),
    ),
  );
  const wall = Date.now() - t0;
  // A report still being retried when its release published is waited for (at most 30 s).
  const expected = CONCURRENT * CONCURRENT_SERVICES * 2;
  const reports = () => fakes.flatMap((f) => f.fake.callbacks);
  for (const end = Date.now() + 30_000; reports().length < expected && Date.now() < end; ) await sleep(100);
  const refused = proxy ? (await refusals(proxy)) - refusedBefore : 0;
  // Every count against what paging finds, now that every write of the run is in: they are moved in the very
  // transactions that write what they count, so there is no lag to wait out.
  const releaseIds = results.flatMap((r) => ('id' in r ? [r.id] : []));
  const checks = await checkCounts((path) => api(ctx, 'GET', path), await countedLists(ctx, releaseIds));
  const wrong = wrongCounts(checks).map((c) => `${c.path}: count ${c.count}, paged ${c.paged}`);
  const statuses = new Map<number, number>();
  for (const c of reports()) statuses.set(c.status, (statuses.get(c.status) ?? 0) + 1);
  const callbackMs = reports()
    .map((c) => c.ms)
    .sort((a, b) => a - b);
  const pct = (q: number) =>
    callbackMs[Math.min(callbackMs.length - 1, Math.floor(q * callbackMs.length))] ?? 0;
  const n = reports().length;
  const resent = reports().reduce((sum, c) => sum + c.attempts - 1, 0);
  await retire(ctx, fakes);
  const ok = results.filter(
    (r): r is Measured => !('error' in r) && r.state === 'published' && r.errors === 0,
  );
  const failed = results.length - ok.length;
  const stagedTimes = ok.map((r) => r.staged).sort((a, b) => a - b);
  const pubTimes = ok.map((r) => r.published).sort((a, b) => a - b);
  const mid = (xs: number[]) => xs[Math.floor(xs.length / 2)] ?? Number.NaN;
  const trans = ok.map((r) => r.transitions);
  for (const r of results) if ('error' in r) say(`  error: ${r.error}`);
  // The floor, measured now on the stack's own DynamoDB Local, once the stack has settled (a step retried after a
  // conflict may still be finishing), so that it runs alone.
  await waitForQuiet(0.35, 60_000);
  // At its fastest: DynamoDB Local ends the burst sooner with fewer requests open at once, so the floor is the better
  // of the functions' own 64 sockets and 4 (docs/local-emulators.md).
  const table = await floorTable(ctx.stack.dynamodb);
  let floorMs = Number.POSITIVE_INFINITY;
  for (const sockets of [64, 4]) {
    const doc = benchDocumentClient(ctx.stack.dynamodb, sockets);
    try {
      floorMs = Math.min(
        floorMs,
        await minimalTransactionBurst(doc, table, CONCURRENT * CONCURRENT_SERVICES),
      );
    } finally {
      doc.destroy();
    }
  }
  const ratio = mid(stagedTimes) / (work * 1000 + floorMs);
  const pubRatio = mid(pubTimes) / (work * 1000 + floorMs);
  const mode = faithful === 'off' ? 'DynamoDB Local' : `faithful (${faithful})`;
  const row = `| ${CONCURRENT} × ${CONCURRENT_SERVICES} | ${work} s | ${poll} s | ${mode} | ${ok.length} / ${results.length}${failed ? ` (${failed} with errors)` : ''} | ${secs(wall)} s | ${secs(mid(stagedTimes))} / ${secs(stagedTimes.at(-1) ?? Number.NaN)} s | ${secs(mid(pubTimes))} / ${secs(pubTimes.at(-1) ?? Number.NaN)} s | ${secs(floorMs)} s | ${fmt(ratio, 2)} | ${fmt(pubRatio, 2)} | ${Math.min(...trans)}-${Math.max(...trans)} | ${checks.length - wrong.length} / ${checks.length} |`;
  const note =
    `poll ${poll} s, ${mode} (load average ${fmt(loadBefore, 1)} before, ${fmt(loadavg()[0], 1)} after): ${n} callbacks ended ${[...statuses].map(([st, k]) => `${k} × ${st || 'no answer'}`).join(', ')}; ` +
    `answer time (first attempt to last answer) p50 ${secs(pct(0.5))} s, p99 ${secs(pct(0.99))} s; ` +
    `sent again after 409/503 + Retry-After: ${fmt(resent / Math.max(1, n), 3)} per callback` +
    (proxy
      ? `; requests the proxy refused (conflicts and throttling, the handlers retried them): ${fmt(refused / Math.max(1, n), 2)} per callback`
      : '') +
    (wrong.length ? `; counts that differ from paging: ${wrong.join('; ')}` : '');
  say(row);
  say(`  ${note}`);
  return {
    poll,
    faithful,
    row,
    note,
    ratio:
      `${mode}, poll ${poll} s: staged ${secs(mid(stagedTimes))} / (${work} + ${secs(floorMs)}) = ${fmt(ratio, 2)}, ` +
      `published ${secs(mid(pubTimes))} / (${work} + ${secs(floorMs)}) = ${fmt(pubRatio, 2)}`,
    met: ratio <= RATIO_TARGET && pubRatio <= RATIO_TARGET,
    wrong,
  };
}

/** Requests the conflict-faithful proxy refused so far (conflicts and throttling, every operation). */
async function refusals(proxy: string): Promise<number> {
  const counts = (await (await fetch(`${proxy}/faithful`)).json()) as {
    conflicts: Record<string, number>;
    throttled: Record<string, number>;
  };
  const sum = (m: Record<string, number>) => Object.values(m).reduce((a, b) => a + b, 0);
  return sum(counts.conflicts) + sum(counts.throttled);
}

/** One release of LARGE services with instant work: creation and every round in several transactions. */
async function largeRun(ctx: Ctx, poll: number): Promise<string> {
  const t0 = Date.now();
  const fakes = await services(ctx, LARGE, 0);
  say(`  registered ${LARGE} fake task services in ${secs(Date.now() - t0)} s`);
  const m = await runRelease(ctx, 0, poll, 1000, 600_000);
  await retire(ctx, fakes);
  const row = `| 1 × ${LARGE} | 0 s | ${poll} s | ${m.state} | ${secs(m.staged)} | ${secs(m.published)} | ${m.transitions} | ${m.errors} |`;
  say(row);
  return row;
}

async function main() {
  const rows: string[] = [];
  const flat: Record<string, number[]> = {};
  const concurrent: Concurrent[] = [];
  const large: string[] = [];
  for (const poll of POLLS) {
    await withStack(poll, async (ctx) => {
      if (LARGE > 0 && poll === POLLS[0]) large.push(await largeRun(ctx, poll));
      for (const work of WORKS) {
        for (const n of SIZES) {
          const fakes = await services(ctx, n, work);
          const m = await runRelease(ctx, work, poll);
          await retire(ctx, fakes);
          const ideal = work * 1000;
          const key = `work ${work} s, poll ${poll} s`;
          flat[key] = [...(flat[key] ?? []), m.transitions];
          const line = `| ${n} | ${work} s | ${poll} s | ${m.state} | ${secs(m.staged)} | ${secs(m.published)} | ${secs(ideal)} | ${secs(m.staged - ideal)} / ${secs(m.published - ideal)} | ${m.transitions} | ${m.errors} |`;
          rows.push(line);
          say(line);
        }
      }
      if (CONCURRENT > 0) concurrent.push(await concurrentRun(ctx, poll, 'off'));
    });
  }
  // The same 20 x 50 on DynamoDB as it treats concurrency (conflicts, throttling: DYNAMODB_FAITHFUL), at a 1 s poll.
  if (CONCURRENT > 0 && FAITHFUL) {
    const proxyPort = await freePort();
    await withStack(
      1,
      async (ctx) => {
        concurrent.push(await concurrentRun(ctx, 1, FAITHFUL, `http://127.0.0.1:${proxyPort}`));
      },
      { DYNAMODB_FAITHFUL: FAITHFUL, DYNAMODB_PROXY_PORT: String(proxyPort) },
    );
  }
  const concurrentRows = concurrent.map((c) => c.row);
  const callbackNote = concurrent.map((c) => c.note);
  const ratios = concurrent.filter((c) => c.poll === 1).map((c) => c.ratio);
  const flatness = Object.entries(flat)
    .map(([k, v]) => `${k}: ${v.join(' / ')} for N = ${SIZES.join(' / ')}`)
    .join('; ');
  const section = [
    '## Release orchestration (`npm run bench:release`)',
    '',
    machineInfo(),
    '',
    'The local stack (`tsx bin/local.ts`) runs the real state machine (statemachines/release.asl.json in ' +
      'aws-local-stepfunctions behind the local Step Functions endpoint) and the real handlers on DynamoDB Local; ' +
      'fake task services (test/helpers/fake-task-service/) answer over HTTP in the benchmark process and call back ' +
      'with PATCH /tasks/<id> when their work ends. Times come from the release’s own event timestamps (created -> ' +
      '`running to staged`, `staged to publishing` -> `publishing to published`); the ideal is the work time (staging and ' +
      'publishing each take it). Transitions are the StateEntered events of the release’s execution history (what ' +
      'Step Functions bills). ACTION_TIMEOUT_SECONDS=15. One release at a time, except the concurrent run.',
    '',
    '| N services | work | poll | end state | start -> staged (s) | publish -> published (s) | ideal (s) | overhead staged / published (s) | transitions | error events |',
    '|---:|---|---|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `Transitions per release do not depend on N (${flatness}): every round is one ReleaseStep call for all tasks. ` +
      'They depend on the number of poll rounds, which callbacks keep to one or two per phase.',
    '',
    ...(large.length
      ? [
          `One release of ${LARGE} task services (more tasks than one transaction holds: its creation and every round are written in several, each task with its event in one of them):`,
          '',
          '| releases × services | work | poll | end state | start -> staged (s) | publish -> published (s) | transitions | error events |',
          '|---|---|---|---|---:|---:|---:|---:|',
          ...large,
          '',
        ]
      : []),
    'Concurrent releases: all created at once over the same task services, each published as soon as it is staged.',
    '',
    '| releases × services | work | poll | DynamoDB | published without error | wall time | start -> staged p50 / max | publish -> published p50 / max | floor | staged p50 / (work + floor) | published p50 / (work + floor) | transitions per release (min-max) | counts equal to paging |',
    '|---|---|---|---|---|---|---|---|---:|---:|---:|---|---|',
    ...concurrentRows,
    '',
    `The floor is ${CONCURRENT * CONCURRENT_SERVICES} of the smallest transaction a callback could be (its task and its event, 2 items, no reads), sent at once to the same DynamoDB Local right after the releases (bench/lib/tx-floor.ts), the faster of two runs with 64 and 4 requests open at once: no burst of that many callbacks can end sooner there. Target: staged p50 and published p50 each <= ${RATIO_TARGET} × (work + floor) at a 1 s poll, plain and faithful; here ${ratios.join('; ')} (${concurrent.filter((c) => c.poll === 1).every((c) => c.met) ? 'met' : '**not met**'}). After each concurrent run every count of the unfiltered lists, of each release, task service and task state, and of one release's tasks is set against what paging through the list finds (the last column).`,
    '',
    `PATCH /tasks callbacks in the concurrent runs: ${callbackNote.join('; ')}.`,
    '',
    'With 1,000 tasks in flight the time goes to the emulator and the one stack process, not to waiting: every task state change is a TransactWriteItems with its event (about 4,000 in these runs, plus the creation and the callback look-ups), DynamoDB Local serializes transactions and charges them per item (bench:txcost), and the API, the Step Functions endpoint and every handler share one Node process, on 2 cores shared with the JVM and the fake services. Transitions stay those of a single release.',
  ].join('\n');
  if (WRITE_DOCS) writeSection(resolve(ROOT, 'docs/benchmarks.md'), 'bench:release', section);
  say('');
  say(section);
}

main().catch((err) => {
  process.stderr.write(`bench:release failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
