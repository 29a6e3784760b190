import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withFreshPorts } from '#local/port-race.js';
import { freeStackPorts, type StackProcess, startStackProcess } from '#local/stack-process.js';

/**
 * `npm start` exactly as the README runs it (local/stack-process.ts), but on free ports and in a fresh temporary
 * DATA_DIR, so it never meets a stack a developer (or another test run) has on the default ports. Its own process
 * group, so a failed test can still reach every process of it. Ready once GET /health answers 200.
 */
export type NpmStart = StackProcess;

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
  const ports = await freeStackPorts();
  const dataDir = mkdtempSync(join(tmpdir(), 'npm-start-'));
  const stack = startStackProcess({
    dataDir,
    ports,
    launcher: 'npm',
    cwd: root,
    baseEnv: cleanEnv(),
    env: { HOST: '127.0.0.1', LOG_LEVEL: 'info', ...extraEnv },
    detached: true,
  });
  try {
    await stack.ready('health', readyWithinMs);
  } catch (err) {
    await killGroup(stack);
    throw err;
  }
  return stack;
}

/** Last resort after a failure: the whole process group, then the data dir. */
export async function killGroup(stack: NpmStart): Promise<void> {
  await stack.killGroup();
  // DynamoDB Local is in the group too; it may take a moment to let go of its files.
  rmSync(stack.dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
