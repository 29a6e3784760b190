import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './config.js';
import { freePort } from './dynamodb-local.js';

/**
 * The whole local stack (`npm start`, bin/local.ts) as a child process, for the tests and the benchmarks that drive
 * it from outside: the one place that knows how to start it, on which ports, where its output goes, when it is
 * ready and how it stops. Callers choose the environment (each adds its own variables) and how it is launched.
 */
export const STACK_PORTS = [
  'COORDINATOR_PORT',
  'FILES_PORT',
  'IDP_PORT',
  'S3_PORT',
  'SFN_PORT',
  'UI_PORT',
  'DYNAMODB_PORT',
] as const;
export type StackPortName = (typeof STACK_PORTS)[number];
export type StackPorts = Record<StackPortName, number>;

/** A free port for each component (probed and let go: the stack binds them). */
export async function freeStackPorts(): Promise<StackPorts> {
  const ports = {} as StackPorts;
  for (const name of STACK_PORTS) ports[name] = await freePort();
  return ports;
}

/**
 * How the stack is launched:
 * - `tsx`: node_modules/.bin/tsx bin/local.ts, so a SIGTERM to the child reaches the stack itself;
 * - `npx`: `npx tsx bin/local.ts`, a wrapper process around the stack (its pid is in DATA_DIR/local.pid);
 * - `npm`: `npm start`, exactly as the README runs it.
 */
export type StackLauncher = 'tsx' | 'npx' | 'npm';

export interface StackProcessOptions {
  dataDir: string;
  ports: StackPorts;
  launcher: StackLauncher;
  /** The caller's own variables, over `baseEnv` (ports and DATA_DIR always win). */
  env?: Record<string, string>;
  /** The environment the caller's variables go over; process.env by default. */
  baseEnv?: NodeJS.ProcessEnv;
  /** In a process group of its own, so `killGroup` reaches every process of it (a JVM included). */
  detached?: boolean;
  /** The working directory (the repository root by default). */
  cwd?: string;
  /** The stack's output goes to this file (appended) instead of memory: long benchmark runs print a lot. */
  logFile?: string;
}

export interface StackExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface StackProcess {
  child: ChildProcess;
  dataDir: string;
  ports: StackPorts;
  /** `http://127.0.0.1:<port>` of a component. */
  url(port: StackPortName): string;
  urls: { coordinator: string; files: string; idp: string; ui: string; dynamodb: string; sfn: string };
  /** Everything the stack printed so far (the log file's content when there is one). */
  output(): string;
  exited: Promise<StackExit>;
  /**
   * Resolves once the stack is ready: `banner` waits for the "Local stack ready" banner (the APIs answer, the first
   * study sync is done and the dashboard is built), `health` for the coordinator's GET /health to answer 200. Throws,
   * naming the output, if the stack exits first or is not ready in time (the stack is then left to the caller).
   */
  ready(via: 'banner' | 'health', withinMs?: number): Promise<void>;
  /** SIGTERM to the stack's own process (DATA_DIR/local.pid, else the child), then waits for the child to exit. */
  stop(): Promise<StackExit>;
  /** Last resort after a failure: SIGKILL to the whole process group (only for a detached stack). */
  killGroup(): Promise<void>;
}

const COMMANDS: Record<StackLauncher, [string, string[]]> = {
  tsx: [join(ROOT, 'node_modules/.bin/tsx'), ['bin/local.ts']],
  npx: ['npx', ['tsx', 'bin/local.ts']],
  npm: ['npm', ['start']],
};

export function startStackProcess(options: StackProcessOptions): StackProcess {
  const { dataDir, ports, launcher } = options;
  const [command, args] = COMMANDS[launcher];
  const child = spawn(command, args, {
    cwd: options.cwd ?? ROOT,
    env: {
      ...(options.baseEnv ?? process.env),
      ...options.env,
      ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
      DATA_DIR: dataDir,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  let out = '';
  let output = () => out;
  if (options.logFile) {
    const file = options.logFile;
    const log = createWriteStream(file, { flags: 'a' });
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    child.once('close', () => log.end());
    output = () => (existsSync(file) ? readFileSync(file, 'utf8') : '');
  } else {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      out += d.toString();
    });
  }
  const exited = new Promise<StackExit>((r) => child.once('exit', (code, signal) => r({ code, signal })));
  const running = () => child.exitCode === null && child.signalCode === null;
  const url = (port: StackPortName) => `http://127.0.0.1:${ports[port]}`;

  return {
    child,
    dataDir,
    ports,
    url,
    urls: {
      coordinator: url('COORDINATOR_PORT'),
      files: url('FILES_PORT'),
      idp: url('IDP_PORT'),
      ui: url('UI_PORT'),
      dynamodb: url('DYNAMODB_PORT'),
      sfn: url('SFN_PORT'),
    },
    output,
    exited,
    async ready(via, withinMs = 120_000) {
      const deadline = Date.now() + withinMs;
      for (;;) {
        if (!running()) throw new Error(`the local stack exited before it was ready:\n${output()}`);
        const ready =
          via === 'banner'
            ? output().includes('Local stack ready')
            : await fetch(`${url('COORDINATOR_PORT')}/health`)
                .then((r) => r.status === 200)
                .catch(() => false);
        if (ready) return;
        if (Date.now() > deadline)
          throw new Error(`the local stack was not ready within ${withinMs / 1000} s:\n${output()}`);
        await new Promise((r) => setTimeout(r, via === 'banner' ? 100 : 250));
      }
    },
    async stop() {
      const pidFile = join(dataDir, 'local.pid');
      const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : child.pid;
      if (running() && pid)
        try {
          process.kill(pid, 'SIGTERM');
        } catch {
          // the stack process is gone already; its wrapper follows
        }
      return exited;
    },
    async killGroup() {
      if (!child.pid || !running()) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await exited;
    },
  };
}
