/**
 * `npm run bench:cold`: the size of every function bundle and how long a cold start spends importing it.
 *
 * The bundles are built by lib/bundling.ts (the same esbuild call as CDK and `npm run build:functions`). For each
 * one, BENCH_RUNS (10) fresh Node processes, one after the other, import the bundle with the environment a deployed
 * function has (table names, issuer, state machine ARN, topic, token endpoint, NODE_OPTIONS=--enable-source-maps,
 * ...; no network is touched at import) and report the time of `await import(bundle)`, measured inside the process,
 * so Node's own start-up is not counted. The median of those runs is the function's import time.
 *
 * A benchmark, not a test: it prints a markdown table and writes it into docs/benchmarks.md (section bench:cold).
 * Targets: every bundle <= 400 KB, every median <= 150 ms. Settings: BENCH_RUNS, BENCH_WRITE_DOCS (true).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { bundleAll, MAX_BUNDLE_BYTES, maxBundleBytes } from '../lib/bundling.js';
import { ROOT } from '../local/config.js';
import { fmt, machineInfo, writeSection } from './lib/report.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 10);
const WRITE_DOCS = process.env.BENCH_WRITE_DOCS !== 'false';
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
  NODE_OPTIONS: '--enable-source-maps',
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

function importMs(file: string): { wall: number; cpu: number } {
  const out = spawnSync(process.execPath, ['--input-type=module', '-e', PROBE], {
    env: { PATH: process.env.PATH ?? '', ...FUNCTION_ENV, BENCH_BUNDLE_URL: pathToFileURL(file).href },
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

function main(): void {
  const dir = mkdtempSync(join(tmpdir(), 'bench-cold-'));
  try {
    const started = performance.now();
    const bundles = bundleAll(dir);
    say(
      `built ${bundles.length} bundles in ${fmt((performance.now() - started) / 1000, 1)} s (${process.version})`,
    );
    const loadBefore = loadavg()[0];
    // Round robin (every bundle once, then again): a burst of load from elsewhere on the machine spreads over all
    // bundles instead of landing on whichever one was being measured at the time.
    const samples = bundles.map(() => [] as { wall: number; cpu: number }[]);
    for (let run = 0; run < RUNS; run++) {
      for (const [i, b] of bundles.entries()) samples[i].push(importMs(b.file));
    }
    const rows = bundles.map((b, i) => {
      const runs = samples[i];
      const times = runs.map((r) => r.wall);
      const row = {
        functions: b.names.join(', '),
        entry: b.entry,
        kb: statSync(b.file).size / 1024,
        median: median(times),
        min: Math.min(...times),
        max: Math.max(...times),
        cpu: median(runs.map((r) => r.cpu)),
      };
      say(
        `${row.functions.padEnd(22)} ${fmt(row.kb).padStart(5)} KB  median ${fmt(row.median, 1).padStart(6)} ms  ` +
          `(min ${fmt(row.min, 1)}, max ${fmt(row.max, 1)}; CPU ${fmt(row.cpu, 1)} ms)`,
      );
      return row;
    });
    const loadAfter = loadavg()[0];
    const within = (r: { entry: string; kb: number }) => r.kb <= maxBundleBytes(r.entry) / 1024;
    const bigOk = rows.every(within);
    const slowOk = rows.every((r) => r.median <= MAX_MS);
    const table = [
      '| function(s) | entry | bundle KB | import median ms | min / max ms | CPU median ms | <= 400 KB | <= 150 ms |',
      '|---|---|---:|---:|---|---:|---|---|',
      ...rows.map(
        (r) =>
          `| ${r.functions} | \`${r.entry}\` | ${fmt(r.kb)} | ${fmt(r.median, 1)} | ${fmt(r.min, 1)} / ${fmt(r.max, 1)} | ${fmt(r.cpu, 1)} | ${within(r) ? 'yes' : '**no**'} | ${r.median <= MAX_MS ? 'yes' : '**no**'} |`,
      ),
    ].join('\n');
    const largest = rows.reduce((a, b) => (b.kb > a.kb ? b : a));
    const slowest = rows.reduce((a, b) => (b.median > a.median ? b : a));
    const section = `## Function bundles and cold imports (\`npm run bench:cold\`)

${machineInfo()}; load average ${fmt(loadBefore, 2)} before, ${fmt(loadAfter, 2)} after

Each bundle is built by \`lib/bundling.ts\` (the esbuild call CDK makes: minified ESM, node22, source map, AWS SDK
bundled). Its import time is the median of ${RUNS} fresh Node processes, run one after another (round robin over the
bundles), each timing \`await import(bundle)\` from inside with a deployed function's environment
(\`NODE_OPTIONS=--enable-source-maps\`, table names, issuer, state machine ARN, topic, token endpoint); Node's own
start-up is not included. The CPU column is the CPU time the process spent on the import: unlike the wall clock, it
does not grow when other processes compete for the 2 cores, so it shows the cost of the bundle itself on a busy
machine. Targets: every bundle <= ${MAX_KB} KB (FilesGraphql ${maxBundleBytes('functions/files/handlers/graphql.ts') / 1024} KB; ${bigOk ? 'met' : '**not met**'}; largest ${largest.functions},
${fmt(largest.kb)} KB) and every median <= ${MAX_MS} ms (${slowOk ? 'met' : '**not met**'}; slowest
${slowest.functions}, ${fmt(slowest.median, 1)} ms).

${table}`;
    say('');
    say(section);
    if (WRITE_DOCS) writeSection(resolve(ROOT, 'docs/benchmarks.md'), 'bench:cold', section);
    if (!bigOk || !slowOk) process.exitCode = 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main();
