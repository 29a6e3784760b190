import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CLIENTS } from '#local/idp/clients.js';
import { type FakeTaskService, startFakeTaskService } from '../helpers/fake-task-service/index.js';
import { killGroup, type NpmStart, npmStart } from '../helpers/npm-start.js';

/**
 * Proof that the end-to-end suite targets a deployment by URL alone. A local stack is started separately, on
 * random (non-default) ports, like any deployment; then `npm run test:e2e` runs as a child process whose
 * environment holds nothing about it but E2E_* variables: its URLs, the client credentials of two of its clients,
 * and a task service it can reach. The stack allows task services on 127.0.0.1 over http, as a deployment allows
 * TASK_SERVICE_ALLOW_PRIVATE/ALLOW_HTTP, so E2E_TASK_SERVICE_HOST=127.0.0.1 is given too; dev tokens are not (a
 * deployment has none), so those tests are skipped and counted, and then run once in the suite's other mode, which
 * starts a stack of its own. Each e2e test thus runs once here; the smoke subset (a few requests) once more.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const DEFAULT_PORTS = [3000, 3001, 3002, 3003, 3004, 3005, 8000];

let stack: NpmStart | undefined;
let reference: FakeTaskService;
let byUrl: Record<string, string> = {};
let adminToken = '';
/** Tests the by-URL run skipped for want of dev tokens: the own-stack run must run exactly that many. */
let skippedByUrl = -1;

interface Run {
  code: number | null;
  output: string;
}

/** `npm run test:e2e <args>` with exactly `env` (and what any shell has: PATH, HOME, a locale). */
function runE2e(args: string[], env: Record<string, string>): Promise<Run> {
  const shell = Object.fromEntries(
    ['PATH', 'HOME', 'LANG', 'TMPDIR', 'JAVA_HOME'].flatMap((k) =>
      process.env[k] ? [[k, process.env[k]!]] : [],
    ),
  );
  const child = spawn('npm', ['run', 'test:e2e', '--', ...args], {
    cwd: ROOT,
    env: { ...shell, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    output += d.toString();
  });
  return new Promise((r) =>
    child.once('close', (code) =>
      r({
        code,
        // biome-ignore lint/suspicious/noControlCharactersInRegex: vitest colours its report
        output: output.replace(/\x1b\[[0-9;]*m/g, ''),
      }),
    ),
  );
}

/** The closing line of the suite's summary reporter. */
function summary(run: Run): { where: string; passed: number; failed: number; skipped: number } {
  const m = /e2e summary \((.+)\): (\d+) passed, (\d+) failed, (\d+) skipped for this target/.exec(
    run.output,
  );
  expect(m, run.output.slice(-4000)).not.toBeNull();
  return { where: m![1], passed: Number(m![2]), failed: Number(m![3]), skipped: Number(m![4]) };
}

const client = (id: string) => DEFAULT_CLIENTS.find((c) => c.client_id === id)!;

async function json(
  method: string,
  url: string,
  body?: unknown,
  raw?: Buffer,
  signed: Record<string, string> = {},
) {
  const res = await fetch(url, {
    method,
    headers: raw
      ? signed
      : {
          Authorization: `Bearer ${adminToken}`,
          'Content-Type': 'application/json',
          Accept: 'application/json',
        },
    body: raw ? new Uint8Array(raw) : body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** The counts of every list the smoke run reads, to show that it wrote nothing. */
async function counts(study: string, file: string): Promise<Record<string, number>> {
  const lists = {
    releases: `${stack!.urls.coordinator}/releases`,
    taskServices: `${stack!.urls.coordinator}/task-services`,
    tasks: `${stack!.urls.coordinator}/tasks`,
    notes: `${stack!.urls.coordinator}/release-notes`,
    events: `${stack!.urls.coordinator}/events`,
    studyFiles: `${stack!.urls.files}/studies/${study}/files`,
    versions: `${stack!.urls.files}/files/${file}/versions`,
    devTokens: `${stack!.urls.files}/developer-tokens`,
    audit: `${stack!.urls.files}/audit?file=${file}`,
  };
  const out: Record<string, number> = {};
  for (const [name, url] of Object.entries(lists)) out[name] = (await json('GET', url)).body.count;
  return out;
}

beforeAll(async () => {
  stack = await npmStart(ROOT, { IDP_CLIENTS: '', LOG_LEVEL: 'warn' });
  for (const port of Object.values(stack.ports)) expect(DEFAULT_PORTS).not.toContain(port);
  // A task service the deployment can reach, which stages and publishes whatever it is given (answers only).
  reference = await startFakeTaskService({ name: 'reference task service' });
  const admin = client('admin');
  const service = client('task-service');
  byUrl = {
    E2E_COORDINATOR_URL: stack.urls.coordinator,
    E2E_FILES_URL: stack.urls.files,
    E2E_TOKEN_URL: `${stack.urls.idp}/oauth/token`,
    E2E_ADMIN_CLIENT_ID: admin.client_id,
    E2E_ADMIN_CLIENT_SECRET: admin.client_secret,
    E2E_SERVICE_CLIENT_ID: service.client_id,
    E2E_SERVICE_CLIENT_SECRET: service.client_secret,
  };
  const token = await fetch(byUrl.E2E_TOKEN_URL, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: `grant_type=client_credentials&client_id=${admin.client_id}&client_secret=${admin.client_secret}`,
  });
  adminToken = ((await token.json()) as { access_token: string }).access_token;
}, 180_000);

afterAll(async () => {
  await reference?.stop();
  if (stack) await killGroup(stack);
});

describe('npm run test:e2e, against a stack given by URL only', () => {
  it('runs the whole suite with client credentials, and skips and counts only what needs dev tokens', async () => {
    const run = await runE2e([], {
      ...byUrl,
      E2E_TASK_SERVICE_URL: reference.url,
      E2E_TASK_SERVICE_HOST: '127.0.0.1',
    });
    const s = summary(run);
    expect(run.code, run.output.slice(-6000)).toBe(0);
    expect(s.where).toBe(`${stack!.urls.coordinator}, by URL`);
    expect(s.failed).toBe(0);
    expect(s.passed).toBeGreaterThanOrEqual(35);
    expect(run.output).toMatch(new RegExp(`  ${s.skipped} need dev-tokens: `));
    expect(s.skipped).toBeGreaterThan(0);
    skippedByUrl = s.skipped;
    expect(run.output).not.toContain('need local-task-services');
    expect(run.output).not.toContain('need task-service');
    // The release journey used the reference task service, not one of its own.
    expect(reference.received.map((r) => r.action)).toEqual(
      expect.arrayContaining(['initialize', 'publish']),
    );
    // It cleaned up after itself: no task service is left registered.
    expect((await json('GET', `${stack!.urls.coordinator}/task-services`)).body.count).toBe(0);
  }, 300_000);

  it('runs the smoke subset on a canary file, writing nothing but its signed URL and two audit records', async () => {
    const study = (await json('GET', `${stack!.urls.coordinator}/studies?limit=1`)).body.results[0].item_id;
    const bytes = Buffer.from('canary\n');
    const created = await json('POST', `${stack!.urls.files}/studies/${study}/files`, {
      file_name: 'canary.txt',
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    });
    expect(created.status).toBe(201);
    const put = await json('PUT', created.body.upload.url, undefined, bytes, created.body.upload.headers);
    expect(put.status).toBe(200);
    expect((await json('POST', created.body.confirm_url, {})).status).toBe(200);
    const file = created.body.file.kf_id;
    const before = await counts(study, file);

    const run = await runE2e(['--smoke'], { ...byUrl, E2E_CANARY_STUDY: study, E2E_CANARY_FILE: file });
    const s = summary(run);
    expect(run.code, run.output.slice(-6000)).toBe(0);
    expect(s).toMatchObject({ failed: 0, skipped: 0 });
    expect(run.output).toContain('test/e2e/smoke/');
    expect(run.output).not.toMatch(/test\/e2e\/(releases|files|events|members)\.e2e\.test\.ts/);

    const after = await counts(study, file);
    expect(after).toEqual({ ...before, audit: before.audit + 2 });
    const audit = (await json('GET', `${stack!.urls.files}/audit?file=${file}&limit=2`)).body.results;
    expect(audit.map((a: any) => `${a.action} ${a.method}`)).toEqual([
      'download signed_url',
      'signed_url.create bearer',
    ]);
  }, 300_000);
});

describe('npm run test:e2e, with no URL', () => {
  it('starts a stack of its own and runs what a deployment cannot: the dev-token tests', async () => {
    // The separate stack is no longer needed: stop it so the two do not compete for the machine.
    if (stack) await killGroup(stack);
    stack = undefined;
    const run = await runE2e(['--tags-filter=dev-tokens'], {});
    const s = summary(run);
    expect(run.code, run.output.slice(-6000)).toBe(0);
    expect(s.where).toMatch(/^the local stack it started at http:\/\/127\.0\.0\.1:\d+$/);
    expect(s).toMatchObject({ failed: 0, skipped: 0 });
    expect(s.passed).toBeGreaterThan(0);
    if (skippedByUrl >= 0) expect(s.passed).toBe(skippedByUrl);
  }, 300_000);
});
