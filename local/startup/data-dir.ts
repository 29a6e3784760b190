import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import type { Component } from '../component.js';

/**
 * Two stacks on one DATA_DIR would share DynamoDB Local's database file. DATA_DIR/local.pid names the stack that
 * owns the directory (a stale file from a killed stack is taken over); it is also how scripts find the process.
 */
export function claimDataDir(dataDir: string): Component {
  const pidFile = join(dataDir, 'local.pid');
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid))
      throw new Error(`${dataDir} is in use by the local stack with pid ${pid}; stop it or set DATA_DIR`);
  }
  writeFileSync(pidFile, `${process.pid}\n`);
  return {
    name: 'data dir lock',
    env: {},
    stop: async () => rmSync(pidFile, { force: true }),
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A path as printed: relative to the working directory when it is inside it. */
export const shown = (path: string) => {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
};
