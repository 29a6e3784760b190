import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../../local/dynamodb-local.js';
import { withFreshPorts } from './port-race.js';
import { ownBundlesEnv } from './stack-bundles.js';

/**
 * `npm start` as a user runs it (`tsx bin/local.ts`) in a child process, on free ports with a temporary DATA_DIR,
 * for tests that drive the whole stack from outside (the browser tests).
 */
const ROOT = resolve(import.meta.dirname, '../..');

export const STACK_PORTS = [
  'COORDINATOR_PORT',
  'FILES_PORT',
  'IDP_PORT',
  'S3_PORT',
  'SFN_PORT',
  'UI_PORT',
  'DYNAMODB_PORT',
] as const;

export interface SpawnedStack {
  ports: Record<(typeof STACK_PORTS)[number], number>;
  url: { coordinator: string; files: string; idp: string; ui: string };
  dataDir: string;
  output(): string;
  stop(): Promise<void>;
}

export function spawnStack(env: Record<string, string> = {}, readyWithinMs = 120_000): Promise<SpawnedStack> {
  return withFreshPorts(() => spawnOnce(env, readyWithinMs));
}

async function spawnOnce(env: Record<string, string>, readyWithinMs: number): Promise<SpawnedStack> {
  const ports = {} as SpawnedStack['ports'];
  for (const name of STACK_PORTS) ports[name] = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'spawned-stack-'));
  // Straight to tsx (not npx), so SIGTERM reaches the stack itself.
  const child: ChildProcess = spawn(join(ROOT, 'node_modules/.bin/tsx'), ['bin/local.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      LOG_LEVEL: 'warn',
      STUDY_SYNC_RETRY_SECONDS: '1',
      ...ownBundlesEnv(dataDir),
      ...env,
      ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
      DATA_DIR: dataDir,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const base = (port: number) => `http://127.0.0.1:${port}`;
  const stack: SpawnedStack = {
    ports,
    url: {
      coordinator: base(ports.COORDINATOR_PORT),
      files: base(ports.FILES_PORT),
      idp: base(ports.IDP_PORT),
      ui: base(ports.UI_PORT),
    },
    dataDir,
    output: () => out,
    stop: async () => {
      const pidFile = join(dataDir, 'local.pid');
      const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : child.pid;
      if (child.exitCode === null && child.signalCode === null && pid) process.kill(pid, 'SIGTERM');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  // Ready when the banner is printed: the APIs answer, the first study sync is done and the dashboard is built.
  const deadline = Date.now() + readyWithinMs;
  while (!out.includes('Local stack ready')) {
    if (child.exitCode !== null) {
      rmSync(dataDir, { recursive: true, force: true });
      throw new Error(`the local stack exited early:\n${out}`);
    }
    if (Date.now() > deadline) {
      await stack.stop();
      throw new Error(`the local stack was not ready within ${readyWithinMs} ms:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return stack;
}
