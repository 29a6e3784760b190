import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type StackPorts, type StackProcess, startStackProcess } from '#local/stack-process.js';

/**
 * `npm start` (bin/local.ts) as a child process (local/stack-process.ts): `npx tsx bin/local.ts` with the given
 * ports and DATA_DIR, in its own process group. For tests that start, stop, kill and restart the whole local stack.
 */
export type { StackProcess };

export function spawnStack(
  dataDir: string,
  ports: StackPorts,
  env: Record<string, string> = {},
): StackProcess {
  return startStackProcess({
    dataDir,
    ports,
    launcher: 'npx',
    env: { LOG_LEVEL: 'warn', ...env },
    detached: true,
  });
}

/** The DynamoDB Local JVMs serving this DATA_DIR (they run with -dbPath <DATA_DIR>/dynamodb). */
export function dynamoJvms(dataDir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (cmd[0]?.endsWith('java') && cmd.includes(join(dataDir, 'dynamodb'))) pids.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

/** The stack's own Node process (DATA_DIR/local.pid; npx and tsx are only wrappers around it). */
export const stackPid = (dataDir: string) => Number(readFileSync(join(dataDir, 'local.pid'), 'utf8').trim());

/** Polls until `probe` returns a value; connection errors count as "not yet". */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  ms: number,
  output: () => string = () => '',
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** SIGKILL to a process group or process that may be gone already. */
export function killHard(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
