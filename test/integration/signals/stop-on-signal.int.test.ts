import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '#local/dynamodb-local.js';
import { cleanEnv } from '#test/helpers/npm-start.js';

/**
 * A supervisor or a script stops a program by signalling the one process it started, not its process group as
 * Ctrl-C does. The reference task service and `npm run demo`, started the way the docs start them, must then
 * stop everything they run, free their ports and exit 0, on SIGINT and on SIGTERM alike.
 *
 * Each command runs as in a reader's terminal: npm and npx on the machine's own Node (no node_modules/.bin on PATH),
 * in a process group of its own, so that after the exit the test can tell that nothing of it is left running.
 */
const ROOT = resolve(import.meta.dirname, '../../..');

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let started: Started | undefined;

afterEach(() => {
  // Only after a failure is anything left: the whole group goes.
  if (started?.child.pid)
    try {
      process.kill(-started.child.pid, 'SIGKILL');
    } catch {
      // nothing left
    }
  started = undefined;
});

function run(command: string, args: string[], env: Record<string, string>): Started {
  const PATH = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((p) => !p.split(/[\\/]/).includes('node_modules'))
    .join(delimiter);
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...cleanEnv(), PATH, ...env },
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
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );
  started = { child, output: () => out, exited };
  return started;
}

async function until(s: Started, text: RegExp, ms: number): Promise<RegExpMatchArray> {
  const deadline = Date.now() + ms;
  for (;;) {
    const m = text.exec(s.output());
    if (m) return m;
    if (s.child.exitCode !== null || Date.now() > deadline)
      throw new Error(`no ${text} (exit status ${s.child.exitCode}):\n${s.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Sends `signal` to the started process alone and expects exit status 0, within 30 s. */
async function stopWith(s: Started, signal: NodeJS.Signals): Promise<void> {
  process.kill(s.child.pid!, signal);
  const ended = await Promise.race([
    s.exited,
    new Promise((r) => setTimeout(() => r('still running 30 s after the signal'), 30_000)),
  ]);
  expect(ended, s.output().slice(-3000)).toEqual({ code: 0, signal: null });
}

/** Nothing of the command's process group is left (its servers, a JVM, a drc command). */
async function groupIsGone(s: Started): Promise<void> {
  // A process that has exited is reaped at once; give the last ones a moment.
  for (let i = 0; i < 50; i++) {
    try {
      process.kill(-s.child.pid!, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`processes of the group are still running 5 s after the exit:\n${s.output().slice(-2000)}`);
}

/** The port can be listened on again. */
async function portIsFree(port: number): Promise<void> {
  await new Promise<void>((ok, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => server.close(() => ok()));
  });
}

describe('the reference task service, started as docs/walkthrough.md starts it', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    it(`npm run task-service exits 0 on ${signal} to its own process, and frees its port`, async () => {
      const port = await freePort();
      const s = run('npm', ['run', 'task-service'], { PORT: String(port) });
      await until(s, /listening on/, 60_000);
      await stopWith(s, signal);
      expect(s.output()).toContain(`${signal}: stopping`);
      await groupIsGone(s);
      await portIsFree(port);
    }, 120_000);

  // npx runs its command through the script shell of .npmrc (bash), which execs tsx; tsx passes the signal on.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    it(`npx tsx examples/task-service/server.ts exits 0 on ${signal} to the npx process, and frees its port`, async () => {
      const port = await freePort();
      const s = run('npx', ['tsx', 'examples/task-service/server.ts'], { PORT: String(port) });
      await until(s, /listening on/, 60_000);
      await stopWith(s, signal);
      expect(s.output()).toContain(`${signal}: stopping`);
      await groupIsGone(s);
      await portIsFree(port);
    }, 120_000);
});

describe('npm run demo', () => {
  // Stopped while drc registers the task services, and while it watches the release (over visible studies).
  for (const [signal, at] of [
    ['SIGINT', /\$ drc services add/],
    ['SIGTERM', /\$ drc releases create .*--study (SD_\w+) --study (SD_\w+) --watch/],
  ] as const)
    it(`exits 0 on ${signal} to its own process mid-run, having stopped its stack and task services`, async () => {
      const s = run('npm', ['run', 'demo'], {});
      const [, coordinator] = await until(s, /local stack ready: coordinator (http:\/\/\S+),/, 120_000);
      const reached = await until(s, at, 120_000);
      if (reached.length > 1) {
        const sample = JSON.parse(readFileSync(join(ROOT, 'local/studies.sample.json'), 'utf8'));
        const visible = (sample.results ?? sample)
          .filter((x: { visible: boolean }) => x.visible)
          .map((x: { kf_id: string }) => x.kf_id);
        expect(visible).toEqual(expect.arrayContaining(reached.slice(1)));
      }
      await stopWith(s, signal);
      expect(s.output()).toContain(`${signal}: stopping the demo`);
      expect(s.output()).not.toContain('demo failed');
      const [, dataDir] = await until(s, /removed (\S+); done/, 1000);
      expect(existsSync(dataDir)).toBe(false);
      await groupIsGone(s);
      await portIsFree(Number(new URL(coordinator).port));
    }, 240_000);
});
