import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../local/dynamodb-local.js';
import { withFreshPorts } from './port-race.js';
import { ownBundlesEnv } from './stack-bundles.js';

/**
 * `npm start` exactly as the README runs it, but on free ports and in a fresh temporary DATA_DIR, so it never meets
 * a stack a developer (or another test run) has on the default ports. Its own process group, so a failed test can
 * still reach every process of it.
 */
export interface NpmStart {
  child: ChildProcess;
  dataDir: string;
  ports: Record<string, number>;
  urls: { coordinator: string; files: string; idp: string };
  /** Everything the stack printed so far. */
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const PORTS = [
  'COORDINATOR_PORT',
  'FILES_PORT',
  'IDP_PORT',
  'S3_PORT',
  'SFN_PORT',
  'UI_PORT',
  'DYNAMODB_PORT',
];

/** The environment of the test runner, less what only the runner means (vitest's own variables). */
export function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !k.startsWith('VITEST') && k !== 'NODE_ENV' && k !== 'TEST') env[k] = v;
  return env;
}

export function npmStart(
  root: string,
  extraEnv: Record<string, string> = {},
  readyWithinMs = 120_000,
): Promise<NpmStart> {
  return withFreshPorts(() => npmStartOnce(root, extraEnv, readyWithinMs));
}

async function npmStartOnce(
  root: string,
  extraEnv: Record<string, string>,
  readyWithinMs: number,
): Promise<NpmStart> {
  const ports: Record<string, number> = {};
  for (const name of PORTS) ports[name] = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'npm-start-'));
  const child = spawn('npm', ['start'], {
    cwd: root,
    env: {
      ...cleanEnv(),
      ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      ...ownBundlesEnv(dataDir),
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const at = (port: number) => `http://127.0.0.1:${port}`;
  const stack: NpmStart = {
    child,
    dataDir,
    ports,
    urls: { coordinator: at(ports.COORDINATOR_PORT), files: at(ports.FILES_PORT), idp: at(ports.IDP_PORT) },
    output: () => out,
    exited,
  };
  const deadline = Date.now() + readyWithinMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await killGroup(stack);
      throw new Error(`npm start exited before it was ready:\n${out}`);
    }
    const ready = await fetch(`${stack.urls.coordinator}/health`)
      .then((r) => r.status === 200)
      .catch(() => false);
    if (ready) return stack;
    if (Date.now() > deadline) {
      await killGroup(stack);
      throw new Error(`npm start was not ready within ${readyWithinMs / 1000} s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Last resort after a failure: the whole process group, then the data dir. */
export async function killGroup(stack: NpmStart): Promise<void> {
  if (stack.child.pid && stack.child.exitCode === null && stack.child.signalCode === null) {
    try {
      process.kill(-stack.child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    await stack.exited;
  }
  // DynamoDB Local is in the group too; it may take a moment to let go of its files.
  rmSync(stack.dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
