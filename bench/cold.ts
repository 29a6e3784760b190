/**
 * `npm run bench:cold`: the size of every function bundle and how long a cold start spends importing it.
 *
 * The bundles are built by lib/bundling.ts (the same esbuild call as CDK and `npm run build:functions`). For each
 * one, BENCH_RUNS (10) fresh Node processes, one after the other, import the bundle with the environment a deployed
 * function has (table names, issuer, state machine ARN, topic, token endpoint, no NODE_OPTIONS,
 * ...; no network is touched at import) and report the time of `await import(bundle)`, measured inside the process,
 * so Node's own start-up is not counted. The median of those runs is the function's import time.
 *
 * With BENCH_COLD_BASELINE=<directory> (a checkout of an earlier version, with its own node_modules, e.g. the main
 * branch's), that version's bundles are built by its own lib/bundling.ts and measured in the same run, in the same
 * round robin, so the two columns compare; BENCH_COLD_BASELINE_LABEL names it in the report (default: its directory
 * and git commit).
 *
 * A benchmark, not a test: it prints a markdown table and writes it into docs/benchmarks.md (section bench:cold).
 * Targets: every median <= 150 ms, every bundle <= 1 MB (a sanity cap, MAX_BUNDLE_BYTES). Settings: BENCH_RUNS,
 * BENCH_COLD_BASELINE, BENCH_COLD_BASELINE_NODE_OPTIONS (--enable-source-maps, as the baseline deployed), BENCH_WRITE_DOCS
 * (true).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { bundleAll as BundleAll } from '#lib/bundling.js';
import { bundleAll, MAX_BUNDLE_BYTES } from '#lib/bundling.js';
import { ROOT } from '#local/config.js';
import { fmt, machineInfo, writeSection } from './lib/report.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 10);
const WRITE_DOCS = process.env.BENCH_WRITE_DOCS !== 'false';
const BASELINE = process.env.BENCH_COLD_BASELINE;
/** The baseline's deployed functions ran with NODE_OPTIONS=--enable-source-maps (before stack-trace.ts); so is it measured. */
const BASELINE_NODE_OPTIONS = process.env.BENCH_COLD_BASELINE_NODE_OPTIONS ?? '--enable-source-maps';
const MAX_KB = MAX_BUNDLE_BYTES / 1024;
const MAX_MS = 150;

const say = (line: string) => process.stdout.write(`${line}\n`);

/** What lib/function-env.ts and the stacks give a deployed function, with plausible values. */
const ACCOUNT = '123456789012';
const FUNCTION_ENV: Record<string, string> = {
  AWS_REGION: 'us-east-1',
  AWS_DEFAULT_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'ASIAEXAMPLEEXAMPLE00',
  AWS_SECRET_ACCESS_KEY: 'example-secret-access-key-example-example',
  AWS_SESSION_TOKEN: 'example-session-token',
  AWS_LAMBDA_FUNCTION_NAME: 'bench-cold',
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '512',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  COORDINATOR_TABLE: 'ReleaseCoordinator-Coordinator',
  STUDIES_TABLE: 'ReleaseCoordinator-Studies',
  FILES_TABLE: 'ReleaseCoordinator-Files',
  FILES_BUCKET: 'releasecoordinator-files-bucket',
  AUTH_ISSUER: 'https://cognito-idp.us-east-1.amazonaws.com/us-east-1_EXAMPLE',
  AUTH_AUDIENCE: 'example-client-id',
  AUTH_JWKS_URI: 'https://cognito-idp.us-east-1.amazonaws.com/us-east-1_EXAMPLE/.well-known/jwks.json',
  POLL_SECONDS: '30',
  ACTION_TIMEOUT_SECONDS: '15',
  HEALTH_FAILURES: '3',
  STUDIES_SOURCE: 'https://kf-api-dataservice.kidsfirstdrc.org',
  RELEASE_STATE_MACHINE_ARN: `arn:aws:states:us-east-1:${ACCOUNT}:stateMachine:ReleaseCoordinator-release`,
  EVENTS_TOPIC_ARN: `arn:aws:sns:us-east-1:${ACCOUNT}:ReleaseCoordinator-events`,
  COORDINATOR_TOKEN_URL: 'https://auth.example.org/oauth2/token',
  COORDINATOR_CLIENT_ID: 'example-coordinator-client',
  COORDINATOR_CLIENT_SECRET_ARN: `arn:aws:secretsmanager:us-east-1:${ACCOUNT}:secret:coordinator-AbCdEf`,
  COORDINATOR_TOKEN_SCOPE: 'task-services/invoke',
  VERIFY_UPLOAD_FUNCTION_NAME: 'ReleaseCoordinator-VerifyUpload',
};

/** Runs in the fresh process: the import alone, timed from inside (wall clock and this process's CPU time). */
const PROBE = `const t = performance.now();
const c = process.cpuUsage();
await import(process.env.BENCH_BUNDLE_URL);
const used = process.cpuUsage(c);
process.stdout.write(JSON.stringify([performance.now() - t, (used.user + used.system) / 1000]));`;

function importMs(file: string, nodeOptions?: string): { wall: number; cpu: number } {
  const out = spawnSync(process.execPath, ['--input-type=module', '-e', PROBE], {
    env: {
      PATH: process.env.PATH ?? '',
      ...FUNCTION_ENV,
      ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
      BENCH_BUNDLE_URL: pathToFileURL(file).href,
    },
    encoding: 'utf8',
    timeout: 60_000,
  });
  let parsed: unknown;
  try {
    parsed = JSON.parse(out.stdout);
  } catch {
    parsed = undefined;
  }
  if (out.status !== 0 || !Array.isArray(parsed))
    throw new Error(`importing ${file} failed (${out.status}): ${out.stderr || out.stdout}`);
  const [wall, cpu] = parsed as [number, number];
  return { wall, cpu };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

interface Built {
  names: string[];
  entry: string;
  file: string;
}

/** The baseline's bundles, built by its own lib/bundling.ts (its options, its stubs, its node_modules). */
async function buildBaseline(root: string, out: string): Promise<{ built: Built[]; label: string }> {
  const mod = (await import(pathToFileURL(join(root, 'lib', 'bundling.ts')).href)) as {
    bundleAll: typeof BundleAll;
  };
  const commit = (() => {
    try {
      return execFileSync('git', ['-C', root, 'log', '-1', '--format=%h %cs'], { encoding: 'utf8' }).trim();
    } catch {
      return 'unknown commit';
    }
  })();
  return {
    built: mod.bundleAll(out),
    label: process.env.BENCH_COLD_BASELINE_LABEL ?? `${root} at ${commit}`,
  };
}

type Sample = { wall: number; cpu: number };
const summary = (b: Built, runs: Sample[]) => {
  const times = runs.map((r) => r.wall);
  return {
    kb: statSync(b.file).size / 1024,
    median: median(times),
    min: Math.min(...times),
    max: Math.max(...times),
    cpu: median(runs.map((r) => r.cpu)),
  };
};

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-cold-'));
  try {
    const started = performance.now();
    const bundles = bundleAll(join(dir, 'current'));
    say(
      `built ${bundles.length} bundles in ${fmt((performance.now() - started) / 1000, 1)} s (${process.version})`,
    );
    const baseline = BASELINE ? await buildBaseline(resolve(BASELINE), join(dir, 'baseline')) : undefined;
    if (baseline) say(`built ${baseline.built.length} baseline bundles from ${baseline.label}`);
    const before = new Map(baseline?.built.map((b) => [b.entry, b]));
    const all: Built[] = [...bundles, ...before.values()];
    const loadBefore = loadavg()[0];
    // Round robin (every bundle once, then again, the baseline's among them): a burst of load from elsewhere on the
    // machine spreads over all bundles instead of landing on whichever one was being measured at the time.
    const samples = new Map<Built, Sample[]>(all.map((b) => [b, []]));
    const isBaseline = new Set(before.values());
    for (let run = 0; run < RUNS; run++)
      for (const b of all)
        samples.get(b)?.push(importMs(b.file, isBaseline.has(b) ? BASELINE_NODE_OPTIONS : undefined));
    const rows = bundles.map((b) => {
      const now = summary(b, samples.get(b) ?? []);
      const old = before.get(b.entry);
      const was = old ? summary(old, samples.get(old) ?? []) : undefined;
      say(
        `${b.names.join(', ').padEnd(22)} ${fmt(now.kb).padStart(5)} KB  median ${fmt(now.median, 1).padStart(6)} ms  ` +
          `(min ${fmt(now.min, 1)}, max ${fmt(now.max, 1)}; CPU ${fmt(now.cpu, 1)} ms)` +
          (was ? `  before: ${fmt(was.kb)} KB, ${fmt(was.median, 1)} ms, CPU ${fmt(was.cpu, 1)} ms` : ''),
      );
      return { functions: b.names.join(', '), entry: b.entry, ...now, was };
    });
    const loadAfter = loadavg()[0];
    const bigOk = rows.every((r) => r.kb <= MAX_KB);
    const slowOk = rows.every((r) => r.median <= MAX_MS);
    const yes = (ok: boolean) => (ok ? 'yes' : '**no**');
    const table = baseline
      ? [
          '| function(s) | before KB | after KB | before median ms | after median ms | after min / max ms | before CPU ms | after CPU ms | <= 1 MB | <= 150 ms |',
          '|---|---:|---:|---:|---:|---|---:|---:|---|---|',
          ...rows.map(
            (r) =>
              `| ${r.functions} | ${r.was ? fmt(r.was.kb) : '-'} | ${fmt(r.kb)} | ${r.was ? fmt(r.was.median, 1) : '-'} | ${fmt(r.median, 1)} | ${fmt(r.min, 1)} / ${fmt(r.max, 1)} | ${r.was ? fmt(r.was.cpu, 1) : '-'} | ${fmt(r.cpu, 1)} | ${yes(r.kb <= MAX_KB)} | ${yes(r.median <= MAX_MS)} |`,
          ),
        ].join('\n')
      : [
          '| function(s) | entry | bundle KB | import median ms | min / max ms | CPU median ms | <= 1 MB | <= 150 ms |',
          '|---|---|---:|---:|---|---:|---|---|',
          ...rows.map(
            (r) =>
              `| ${r.functions} | \`${r.entry}\` | ${fmt(r.kb)} | ${fmt(r.median, 1)} | ${fmt(r.min, 1)} / ${fmt(r.max, 1)} | ${fmt(r.cpu, 1)} | ${yes(r.kb <= MAX_KB)} | ${yes(r.median <= MAX_MS)} |`,
          ),
        ].join('\n');
    const largest = rows.reduce((a, b) => (b.kb > a.kb ? b : a));
    const slowest = rows.reduce((a, b) => (b.median > a.median ? b : a));
    const section = `## Function bundles and cold imports (\`npm run bench:cold\`)

${machineInfo()}; load average ${fmt(loadBefore, 2)} before, ${fmt(loadAfter, 2)} after

Each bundle is built by \`lib/bundling.ts\` (the esbuild call CDK makes: minified ESM, node22, source map, AWS SDK
bundled). Its import time is the median of ${RUNS} fresh Node processes, run one after another (round robin over the
bundles), each timing \`await import(bundle)\` from inside with a deployed function's environment
(table names, issuer, state machine ARN, topic, token endpoint; no \`--enable-source-maps\`, see
functions/shared/stack-trace.ts); Node's own start-up is not included. The CPU column is the CPU time the process
spent on the import: unlike the wall clock, it does not grow when other processes compete for the 2 cores, so it
shows the cost of the bundle itself on a busy machine.${
      baseline
        ? ` "Before" is ${baseline.label}: hand-built signed requests for S3, Lambda, SNS, EventBridge and FilesGraphql's
DynamoDB, two bundle stubs, middy; built by its own \`lib/bundling.ts\` and run as it deployed (NODE_OPTIONS
\`${BASELINE_NODE_OPTIONS}\`), in this same run, interleaved with "after" (this version: the AWS SDK clients, Node
builtins bundled through \`process.getBuiltinModule\` (lib/bundling.ts), source maps read only when an error is
logged).`
        : ''
    } Targets: every median <= ${MAX_MS} ms (${slowOk ? 'met' : '**not met**'}; slowest ${slowest.functions},
${fmt(slowest.median, 1)} ms) and every bundle <= ${MAX_KB / 1024} MB, a sanity cap (${bigOk ? 'met' : '**not met**'};
largest ${largest.functions}, ${fmt(largest.kb)} KB).

${table}`;
    say('');
    say(section);
    if (WRITE_DOCS) writeSection(resolve(ROOT, 'docs/benchmarks.md'), 'bench:cold', section);
    if (!bigOk || !slowOk) process.exitCode = 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
