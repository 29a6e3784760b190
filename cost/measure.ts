/**
 * `npm run cost:measure`: counts what the running code makes AWS bill, and writes the cost profile
 * (docs/cost-profile.json) that `npm run cost` prices.
 *
 * It starts the local stack (bench/lib/stack.ts) with LOCAL_METER_FILE set, so the stack records every Lambda
 * handler call (duration, log bytes, API request and answer sizes), every DynamoDB request with the capacity units
 * DynamoDB Local computes for it (ReturnConsumedCapacity=INDEXES, asked for by the meter's proxy), every S3 request
 * by price class and every publish to the events topic (local/meter/). Step Functions transitions come from the
 * execution histories of the local endpoint, exactly as bench:release counts them.
 *
 * Scenarios:
 *   release    N task services (COST_SERVICES, default 1,10,50) x P poll rounds while staging (COST_POLLS, 1,5,20),
 *              create -> staged -> publish -> published, task services that never call back (bench/lib/
 *              the fake task service (test/helpers/fake-task-service/) with stagePolls = P; progress rises each round, so each round writes). Every
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
 * Settings: COST_PROFILE (output, default docs/cost-profile.json), COST_SERVICES, COST_POLLS, COST_DOWNLOADS,
 * COST_PHASE_SECONDS (how long each schedules phase is observed, default 26), COST_DEBUG (print every DynamoDB
 * request of the release scenario). The scenarios live in cost/measure/, one file each.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { machineInfo } from '#bench/lib/report.js';
import { ROOT } from '#local/config.js';
import {
  DOWNLOADS,
  LARGE_BYTES,
  LOCAL_POLL_SECONDS,
  MEMORY_MB,
  OUT,
  POLLS,
  SERVICES,
  SMALL_BYTES,
  STATE_MACHINE,
  say,
  settings,
} from './measure/config.js';
import { measureDownloads } from './measure/downloads.js';
import { Tally } from './measure/records.js';
import { measureCallbacks, measureRelease, type ReleasePoint } from './measure/releases.js';
import { measureSchedules } from './measure/schedules.js';
import { withMeteredStack } from './measure/stack.js';
import type { CostProfile } from './profile.js';
import { deployedLogLevel } from './settings.js';
import { fitUsage, type Usage } from './usage.js';

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
  const tally = new Tally();
  try {
    say('releases, callbacks and downloads (one stack):');
    await withMeteredStack(
      join(work, 'main.jsonl'),
      { HEALTH_INTERVAL_SECONDS: '86400', RECONCILE_SECONDS: '86400', STUDY_SYNC_SECONDS: '86400' },
      async (ctx, meter) => {
        for (const n of SERVICES)
          for (const p of POLLS) {
            const { point, bytes } = await measureRelease(ctx, meter, tally, n, p);
            points.push(point);
            stored.push({ x: { N: n, P: point.P }, usage: { bytes } });
          }
        say('callbacks:');
        callback = await measureCallbacks(ctx, meter, tally);
        const now = callback.usage;
        say(
          `  write units per callback: before ${before ? `${before.wru.toFixed(1)} (${relative(ROOT, OUT)} of ${before.measured})` : 'unknown (no earlier profile)'}, ` +
            `after ${(now['ddb.wru'] ?? 0).toFixed(1)}; read units ${before ? before.rru.toFixed(1) : '?'} -> ${(now['ddb.rru'] ?? 0).toFixed(1)}`,
        );
        say('downloads:');
        downloads = await measureDownloads(ctx, meter, tally);
      },
    );
    say('schedules (a second stack):');
    const schedules = await measureSchedules(join(work, 'schedules.jsonl'), tally);
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
        compressionRatio: Number(tally.compressionRatio(logText).toFixed(4)),
      },
      storage: {
        bytesPerRelease: fitUsage(releaseTerms, releaseValues, stored),
        bytesPerDownload: Math.round(downloads.bytesPerDownload),
      },
    };
    writeFileSync(OUT, `${JSON.stringify(profile, null, 2)}\n`);
    say(
      tally.readMismatches.length
        ? `reads where DynamoDB Local's units differ from the items returned: ${tally.readMismatches
            .slice(0, 10)
            .map((r) => `${r.op} ${r.localUnits} vs ${r.computedRead}`)
            .join('; ')} (${tally.readMismatches.length} in all)`
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
