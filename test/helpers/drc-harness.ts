import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import {
  clientCredentials,
  type RunningTaskService,
  startTaskService,
} from '#examples/task-service/service.js';
import { type SpawnedStack, spawnStack } from '#test/helpers/spawned-stack.js';

/**
 * The harness of the drc integration suites: `drc` as a user runs it: a child process of bin/drc.mjs (the package's bin) with stdout and stderr piped, so no
 * TTY: every answer is JSON. The stack is `npm start` in a child process of its own (a 5 MiB multipart threshold and
 * part size, so multipart uploads stay small), with the reference task service beside it. A fetch spy preloaded into
 * drc (test/helpers/drc-fetch-spy.mjs) records the requests it sends, so resumed transfers are checked on the wire.
 */
export const ROOT = resolve(import.meta.dirname, '../..');
export const NODE = join(ROOT, 'node_modules/.bin/node');
export const SPY = join(ROOT, 'test/helpers/drc-fetch-spy.mjs');
export const MiB = 1024 * 1024;

export let stack: SpawnedStack;
export let service: RunningTaskService;
/** The reference service checks the coordinator's signatures with the secret `services add` answered. */
export const serviceSecrets: string[] = [];
export let work: string;
export let configDir: string;
export let study: string;

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export function drcEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}`,
    DRC_COORDINATOR_URL: stack.url.coordinator,
    DRC_FILES_URL: stack.url.files,
    DRC_IDP_URL: stack.url.idp,
    DRC_CONFIG_DIR: configDir,
    ...extra,
  };
  delete env.DRC_TOKEN;
  if (extra.DRC_TOKEN) env.DRC_TOKEN = extra.DRC_TOKEN;
  return env;
}

export function start(
  args: string[],
  extra: Record<string, string> = {},
): { child: ChildProcess; done: Promise<Run> } {
  const child = spawn(NODE, [join(ROOT, 'bin/drc.mjs'), ...args], {
    cwd: work,
    env: drcEnv(extra),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const done = new Promise<Run>((r) =>
    child.once('close', (code, signal) => r({ code, signal, stdout, stderr })),
  );
  return { child, done };
}

export const drc = (args: string[], extra: Record<string, string> = {}) => start(args, extra).done;

/** Runs drc and expects exit status 0 and one JSON document on stdout. */
export async function json(args: string[], extra: Record<string, string> = {}): Promise<any> {
  const r = await drc(args, extra);
  if (r.code !== 0) throw new Error(`drc ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

export const lines = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

export async function until<T>(probe: () => T | undefined, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
export const spyLog = (path: string) => (existsSync(path) ? lines(readFileSync(path, 'utf8')) : []);
export const partNumber = (url: string) => Number(new URL(url).searchParams.get('partNumber'));

/** The study the suites work in: the first that is not deleted, as a login's `studies ls` finds it. */
export function setStudy(id: string): void {
  study = id;
}

/** Starts the stack and the reference task service once per file, and removes everything after. */
export function useDrcStack(): void {
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'drc-'));
    configDir = join(work, 'config');
    stack = await spawnStack({
      MULTIPART_THRESHOLD_BYTES: String(5 * MiB),
      MULTIPART_PART_SIZE_BYTES: String(5 * MiB),
      POLL_SECONDS: '1',
    });
    service = await startTaskService(
      {
        name: 'cli stager',
        coordinatorUrl: stack.url.coordinator,
        callbackToken: clientCredentials(
          `${stack.url.idp}/oauth/token`,
          'task-service',
          'task-service-local-secret',
        ),
        auth: { mode: 'jwks', issuer: stack.url.idp, audience: ['task-services'] },
        signingSecrets: () => serviceSecrets,
        stageSeconds: 1,
        publishSeconds: 1,
        progressSteps: 2,
        failAt: [],
      },
      { port: 0, host: '127.0.0.1' },
    );
  });

  afterAll(async () => {
    await service?.stop();
    await stack?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });
}
