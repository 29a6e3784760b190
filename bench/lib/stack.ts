import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freeStackPorts, type StackProcess, startStackProcess } from '#local/stack-process.js';

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
  const ports = await freeStackPorts();
  const logFile = join(dataDir, 'stack.log');
  // Straight to tsx (not npx), so the SIGTERM of stop() reaches the stack process itself. The output goes to a file
  // (a long run prints a lot), appended across restarts.
  const launch = () =>
    startStackProcess({ dataDir, ports, launcher: 'tsx', env: { LOG_LEVEL: 'warn', ...env }, logFile });
  let running: StackProcess;
  const stop = async () => {
    await running.stop();
    // BENCH_KEEP_DATA=true keeps the stack's data and stack.log for a post-mortem of a failed run.
    if (process.env.BENCH_KEEP_DATA === 'true') process.stderr.write(`stack data kept in ${dataDir}\n`);
    else rmSync(dataDir, { recursive: true, force: true });
  };
  const start = async () => {
    running = launch();
    try {
      await running.ready('health', 120_000);
    } catch (err) {
      if (running.child.exitCode !== null) throw new Error(`the local stack exited early; see ${logFile}`);
      await stop();
      throw err;
    }
  };
  await start();
  const { urls } = running!;
  return {
    ...urls,
    dataDir,
    stop,
    restart: async () => {
      await running.stop();
      await start();
    },
    tail: (lines = 40) => running.output().split('\n').slice(-lines).join('\n'),
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
