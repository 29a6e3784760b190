import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { vi } from 'vitest';
import { run } from '#cli/program.js';
import type { CoordinatorApi } from '#test/helpers/coordinator-api.js';

/**
 * `drc import` against an in-process coordinator (test/helpers/coordinator-api.ts): `drcIn` runs cli/program.ts in
 * this process (cheap, for most runs), `drcSpawned` runs bin/drc.mjs as a user does. Both without a TTY, so the
 * answer is one JSON document on stdout.
 */

export interface DrcRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed, when it is JSON. */
  json: any;
}

const ROOT = resolve(import.meta.dirname, '../../..');

const parsed = (text: string) => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

function env(api: CoordinatorApi): Record<string, string> {
  return {
    DRC_COORDINATOR_URL: api.baseUrl,
    DRC_TOKEN: api.idp.admin(),
    DRC_CONFIG_DIR: mkdtempSync(join(tmpdir(), 'drc-import-')),
  };
}

export async function drcIn(api: CoordinatorApi, args: string[]): Promise<DrcRun> {
  for (const [k, v] of Object.entries(env(api))) vi.stubEnv(k, v);
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  try {
    const code = await run(args);
    return { code, stdout, stderr, json: parsed(stdout) };
  } finally {
    out.mockRestore();
    err.mockRestore();
    vi.unstubAllEnvs();
  }
}

export function drcSpawned(api: CoordinatorApi, args: string[]): Promise<DrcRun> {
  const child = spawn(join(ROOT, 'node_modules/.bin/node'), [join(ROOT, 'bin/drc.mjs'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env(api) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((r) =>
    child.once('close', (code) => r({ code: code ?? -1, stdout, stderr, json: parsed(stdout) })),
  );
}

/** Every record of a list, following `next`, with the `count` of each page it read. */
export async function pageAll(
  api: CoordinatorApi,
  path: string,
): Promise<{ counts: number[]; items: any[] }> {
  const counts: number[] = [];
  const items: any[] = [];
  let next: string | null = `${path}${path.includes('?') ? '&' : '?'}limit=100`;
  while (next) {
    const r = await api.call('GET', next);
    if (r.status !== 200) throw new Error(`GET ${next}: ${r.status} ${r.text}`);
    counts.push(r.body.count);
    items.push(...r.body.results);
    next = r.body.next ? r.body.next.slice(api.baseUrl.length) : null;
  }
  return { counts, items };
}
