import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withFreshPorts } from '#local/port-race.js';
import { freeStackPorts, type StackPorts, startStackProcess } from '#local/stack-process.js';

/**
 * `npm start` as a user runs it (`tsx bin/local.ts`, local/stack-process.ts) in a child process, on free ports with
 * a temporary DATA_DIR, for tests that drive the whole stack from outside (the browser tests). Ready once the banner
 * is printed: the APIs answer, the first study sync is done and the dashboard is built.
 */
export interface SpawnedStack {
  ports: StackPorts;
  url: { coordinator: string; files: string; idp: string; ui: string };
  dataDir: string;
  output(): string;
  /** Stops the stack and removes its DATA_DIR. */
  stop(): Promise<void>;
}

export function spawnStack(env: Record<string, string> = {}, readyWithinMs = 120_000): Promise<SpawnedStack> {
  return withFreshPorts(() => spawnOnce(env, readyWithinMs));
}

async function spawnOnce(env: Record<string, string>, readyWithinMs: number): Promise<SpawnedStack> {
  const ports = await freeStackPorts();
  const dataDir = mkdtempSync(join(tmpdir(), 'spawned-stack-'));
  const child = startStackProcess({
    dataDir,
    ports,
    launcher: 'tsx',
    env: { LOG_LEVEL: 'warn', STUDY_SYNC_RETRY_SECONDS: '1', ...env },
  });
  const stack: SpawnedStack = {
    ports,
    url: child.urls,
    dataDir,
    output: child.output,
    stop: async () => {
      await child.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  try {
    await child.ready('banner', readyWithinMs);
  } catch (err) {
    await stack.stop();
    throw err;
  }
  return stack;
}
