import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT } from '../../local/config.js';
import { freePort } from '../../local/dynamodb-local.js';

/** Where a benchmark finds the stack it drives. */
export interface StackEndpoints {
  coordinator: string;
  files: string;
  idp: string;
  /** The dashboard (UI_PORT). */
  ui: string;
  dynamodb: string;
  /** The local Step Functions endpoint (execution histories for transition counts). */
  sfn: string;
  /**
   * The stack's DATA_DIR (its `local.pid` names the stack process): the temporary one of a stack the benchmark
   * started, BENCH_DATA_DIR for a running one.
   */
  dataDir?: string;
  /** Stops the stack if the benchmark started it. */
  stop(): Promise<void>;
  /**
   * Stops the stack and starts it again on the same ports and data (a stack the benchmark did not start is left
   * alone): a measurement then meets the emulators as they are after a start, not just after a bulk load.
   */
  restart(): Promise<void>;
  /** The last lines the stack printed (empty for a stack the benchmark did not start), for post-mortems. */
  tail(lines?: number): string;
}

/**
 * A running stack named by BENCH_COORDINATOR_URL (+ BENCH_FILES_URL, BENCH_IDP_URL, BENCH_DYNAMODB_ENDPOINT), or a fresh
 * `tsx bin/local.ts` child on random ports with a temporary DATA_DIR, stopped (and its data removed) afterwards.
 */
export async function benchStack(env: Record<string, string> = {}): Promise<StackEndpoints> {
  if (process.env.BENCH_COORDINATOR_URL) {
    return {
      coordinator: process.env.BENCH_COORDINATOR_URL.replace(/\/$/, ''),
      files: (process.env.BENCH_FILES_URL ?? 'http://127.0.0.1:3001').replace(/\/$/, ''),
      idp: (process.env.BENCH_IDP_URL ?? 'http://127.0.0.1:3002').replace(/\/$/, ''),
      ui: (process.env.BENCH_UI_URL ?? 'http://127.0.0.1:3005').replace(/\/$/, ''),
      dynamodb: (process.env.BENCH_DYNAMODB_ENDPOINT ?? 'http://127.0.0.1:8000').replace(/\/$/, ''),
      sfn: (process.env.BENCH_SFN_URL ?? 'http://127.0.0.1:3004').replace(/\/$/, ''),
      dataDir: process.env.BENCH_DATA_DIR,
      stop: async () => {},
      restart: async () => {},
      tail: () => '',
    };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-stack-'));
  const ports: Record<string, string> = {};
  for (const name of [
    'COORDINATOR_PORT',
    'FILES_PORT',
    'IDP_PORT',
    'S3_PORT',
    'SFN_PORT',
    'UI_PORT',
    'DYNAMODB_PORT',
  ])
    ports[name] = String(await freePort());
  const logFile = join(dataDir, 'stack.log');
  const log = createWriteStream(logFile);
  const coordinator = `http://127.0.0.1:${ports.COORDINATOR_PORT}`;
  let running: { child: ChildProcess; exited: Promise<void> };
  const halt = async () => {
    const { child, exited } = running;
    const pidFile = join(dataDir, 'local.pid');
    const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : child.pid;
    if (child.exitCode === null && child.signalCode === null && pid) process.kill(pid, 'SIGTERM');
    await exited;
  };
  const stop = async () => {
    await halt();
    log.end();
    // BENCH_KEEP_DATA=true keeps the stack's data and stack.log for a post-mortem of a failed run.
    if (process.env.BENCH_KEEP_DATA === 'true') process.stderr.write(`stack data kept in ${dataDir}\n`);
    else rmSync(dataDir, { recursive: true, force: true });
  };
  const start = async () => {
    // Straight to tsx (not npx), so the signal in halt() reaches the stack process itself.
    const child: ChildProcess = spawn(join(ROOT, 'node_modules/.bin/tsx'), ['bin/local.ts'], {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'warn', ...env, ...ports, DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    running = { child, exited: new Promise<void>((r) => child.once('exit', () => r())) };
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the local stack exited early; see ${logFile}`);
      try {
        if ((await fetch(`${coordinator}/health`)).status === 200) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        await stop();
        throw new Error('the local stack did not become ready within 120 s');
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  await start();
  return {
    coordinator,
    files: `http://127.0.0.1:${ports.FILES_PORT}`,
    idp: `http://127.0.0.1:${ports.IDP_PORT}`,
    ui: `http://127.0.0.1:${ports.UI_PORT}`,
    dynamodb: `http://127.0.0.1:${ports.DYNAMODB_PORT}`,
    sfn: `http://127.0.0.1:${ports.SFN_PORT}`,
    dataDir,
    stop,
    restart: async () => {
      await halt();
      await start();
    },
    tail: (lines = 40) =>
      existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-lines).join('\n') : '',
  };
}

/** Busy share of the machine's CPUs over `ms`, from /proc/stat (Linux). */
async function cpuBusy(ms: number): Promise<number> {
  const sample = () => {
    const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
    const n = fields.map(Number);
    const idle = n[3] + (n[4] ?? 0); // idle + iowait
    return { idle, total: n.reduce((a, b) => a + b, 0) };
  };
  const a = sample();
  await sleep(ms);
  const b = sample();
  const total = b.total - a.total;
  return total > 0 ? 1 - (b.idle - a.idle) / total : 0;
}

/**
 * Waits until the machine is quiet (two 2 s windows under `threshold` busy), at most `maxMs`; returns the seconds
 * waited. A stack started on a table full of releases first resumes them (the reconciler's start-up run), which is
 * load of its own that a measurement should not meet.
 */
export async function waitForQuiet(threshold = 0.25, maxMs = 300_000): Promise<number> {
  const t0 = Date.now();
  let quiet = 0;
  while (quiet < 2 && Date.now() - t0 < maxMs) quiet = (await cpuBusy(2000)) < threshold ? quiet + 1 : 0;
  return (Date.now() - t0) / 1000;
}
