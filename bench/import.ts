/**
 * `npm run bench:import`: how fast `drc import` brings an original coordinator across, and how much memory it takes.
 *
 * A local stack (`tsx bin/local.ts`, or BENCH_COORDINATOR_URL's) and a stand-in original
 * (test/helpers/original-coordinator) over HTTP on this machine. Two runs of `drc import` as a user starts it
 * (bin/drc.mjs, a child process whose resident memory is read from /proc every 100 ms):
 *   1. 20 releases x 50 tasks, every release state (`--active-as canceled` for the active ones), 5,000 events,
 *      then the same command again, which must write nothing;
 *   2. the same releases with BENCH_IMPORT_EVENTS (50,000) events, on a fresh stack, for the time per 10,000
 *      events and whether memory stays flat as the original grows.
 * After each first run every list's `count` is checked against the stand-in. Records per second count every record
 * written (task services, studies, releases, tasks, notes, events) over the run's wall time.
 *
 * Settings: BENCH_IMPORT_EVENTS (50000), BENCH_IMPORT_PAGE (100), BENCH_WRITE_DOCS (true).
 */

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { ROOT } from '#local/config.js';
import { type StandInShape, startStandIn } from '#test/helpers/original-coordinator/index.js';
import { fmt, machineInfo, writeSection } from './lib/report.js';
import { benchStack, type StackEndpoints } from './lib/stack.js';

const LARGE_EVENTS = Number(process.env.BENCH_IMPORT_EVENTS ?? 50_000);
const PAGE = Number(process.env.BENCH_IMPORT_PAGE ?? 100);
const WRITE_DOCS = process.env.BENCH_WRITE_DOCS !== 'false';
const SHAPE: StandInShape = {
  services: 50,
  studies: 30,
  releases: 20,
  tasksPerRelease: 50,
  notes: 40,
  events: 5000,
};

const say = (line: string) => process.stdout.write(`${line}\n`);

interface Run {
  seconds: number;
  peakMiB: number;
  report: any;
  /** The machine's 1-minute load average at the run's end (other processes slow an emulator that runs on 2 cores). */
  load: number;
}

async function adminToken(stack: StackEndpoints): Promise<string> {
  const res = await fetch(`${stack.idp}/dev/tokens`, {
    method: 'POST',
    body: JSON.stringify({ sub: 'bench-import', roles: ['admin'], expires_in: 3600 }),
  });
  if (res.status !== 200) throw new Error(`POST /dev/tokens answered ${res.status}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** VmHWM (peak resident set) of a process, in MiB; 0 when it is gone. */
function peakMiB(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

function drcImport(stack: StackEndpoints, token: string, args: string[]): Promise<Run> {
  const started = performance.now();
  const child = spawn(join(ROOT, 'node_modules/.bin/node'), [join(ROOT, 'bin/drc.mjs'), 'import', ...args], {
    cwd: ROOT,
    env: { ...process.env, DRC_COORDINATOR_URL: stack.coordinator, DRC_TOKEN: token },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, peakMiB(child.pid ?? 0));
  }, 100);
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  return new Promise((ok, fail) =>
    child.once('close', (code) => {
      clearInterval(sampler);
      if (code !== 0) return fail(new Error(`drc import exited ${code}: ${stderr}`));
      ok({
        seconds: (performance.now() - started) / 1000,
        peakMiB: peak,
        report: JSON.parse(stdout),
        load: loadavg()[0],
      });
    }),
  );
}

const written = (r: Run) => Object.values<any>(r.report.resources).reduce((n, t) => n + t.written, 0);

/** Every list's count against what the stand-in holds (all of it comes across with --active-as). */
async function checkCounts(stack: StackEndpoints, token: string, r: Run): Promise<void> {
  const count = async (path: string) => {
    const res = await fetch(`${stack.coordinator}${path}`, { headers: { Authorization: `Bearer ${token}` } });
    return ((await res.json()) as { count: number }).count;
  };
  const t = r.report.resources;
  const expected: [string, number][] = [
    ['/task-services', t.task_services.written],
    ['/releases', t.releases.written],
    ['/tasks', t.tasks.written],
    ['/release-notes', t.release_notes.written],
    // The run's own event is one more, and each rejected task has one naming its original state.
    [
      '/events',
      t.events.written + 1 + r.report.flagged.filter((f: any) => /^rejected/.test(f.flags[0])).length,
    ],
  ];
  for (const [path, n] of expected) {
    const got = await count(path);
    if (got !== n) throw new Error(`GET ${path} counts ${got}, the import wrote ${n}`);
  }
}

async function measure(events: number): Promise<{ first: Run; again: Run }> {
  const stack = await benchStack();
  const original = await startStandIn({ ...SHAPE, events }, { token: 'bench-original' });
  try {
    const token = await adminToken(stack);
    const args = [
      '--from',
      original.url,
      '--token',
      'bench-original',
      '--active-as',
      'canceled',
      '--page-size',
      String(PAGE),
      '--json',
    ];
    const first = await drcImport(stack, token, args);
    await checkCounts(stack, token, first);
    const again = await drcImport(stack, token, args);
    if (written(again) !== 0) throw new Error(`the second run wrote ${written(again)} records`);
    return { first, again };
  } finally {
    await original.close();
    await stack.stop();
  }
}

const row = (label: string, r: Run) => {
  const t = r.report.resources;
  return (
    `| ${label} | ${fmt(t.events.read)} | ${fmt(written(r))} | ${fmt(r.seconds, 1)} | ` +
    `${fmt(written(r) / r.seconds)} | ${fmt((r.seconds * 10_000) / t.events.read, 0)} | ${fmt(r.peakMiB)} |`
  );
};

async function main() {
  say(
    `bench:import: 20 releases x 50 tasks, ${fmt(SHAPE.events)} then ${fmt(LARGE_EVENTS)} events, pages of ${PAGE}`,
  );
  const small = await measure(SHAPE.events);
  say(row('20 x 50', small.first));
  say(row('20 x 50, again', small.again));
  const large = await measure(LARGE_EVENTS);
  say(row(`20 x 50, ${fmt(LARGE_EVENTS)} events`, large.first));
  say(row(`… again`, large.again));
  const md = [
    '## drc import (`npm run bench:import`)',
    '',
    machineInfo(),
    '',
    'A stand-in original (test/helpers/original-coordinator: every release state, 50 task services, 30 studies, ' +
      '40 notes) over HTTP on this machine, imported into a fresh local stack by `drc import --active-as canceled` ' +
      `(bin/drc.mjs, pages of ${PAGE}), then the same command again, which writes nothing. Records per second count ` +
      "every record written over the run's wall time; peak memory is the drc process's VmHWM. Each first run is " +
      "checked: every list's `count` equals what the import wrote.",
    '',
    '| run | events read | records written | wall time (s) | records/s | s per 10,000 events read | drc peak memory (MiB) |',
    '|---|---|---|---|---|---|---|',
    row('20 × 50', small.first),
    row('20 × 50, again', small.again),
    row(`20 × 50, ${fmt(LARGE_EVENTS)} events`, large.first),
    row(`20 × 50, ${fmt(LARGE_EVENTS)} events, again`, large.again),
    '',
    'The 1-minute load average at the end of each run (other jobs slow DynamoDB Local on 2 cores): ' +
      `${[small.first, small.again, large.first, large.again].map((r) => fmt(r.load, 1)).join(', ')}.`,
  ].join('\n');
  if (WRITE_DOCS) writeSection(resolve(ROOT, 'docs/benchmarks.md'), 'import', md);
  say(md);
}

await main();
