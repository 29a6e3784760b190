import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clientCredentials,
  type RunningTaskService,
  startTaskService,
} from '#examples/task-service/service.js';
import { freePort } from '#local/dynamodb-local.js';
import { fileSecretSource } from '#packages/task-service/src/secrets.js';
import { type SpawnedStack, spawnStack } from '#test/helpers/spawned-stack.js';

/**
 * `drc` as a user runs it: a child process of bin/drc.mjs (the package's bin) with stdout and stderr piped, so no
 * TTY: every answer is JSON. The stack is `npm start` in a child process of its own (a 5 MiB multipart threshold and
 * part size, so multipart uploads stay small), with the reference task service beside it. A fetch spy preloaded into
 * drc (test/helpers/drc-fetch-spy.mjs) records the requests it sends, so resumed transfers are checked on the wire.
 */
const ROOT = resolve(import.meta.dirname, '../../..');
const NODE = join(ROOT, 'node_modules/.bin/node');
const SPY = join(ROOT, 'test/helpers/drc-fetch-spy.mjs');
const MiB = 1024 * 1024;

let stack: SpawnedStack;
let service: RunningTaskService;
/** The reference service checks the coordinator's signatures with the secret `services add` answered. */
const serviceSecrets: string[] = [];
let work: string;
let configDir: string;
let study: string;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function drcEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
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

function start(
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

const drc = (args: string[], extra: Record<string, string> = {}) => start(args, extra).done;

/** Runs drc and expects exit status 0 and one JSON document on stdout. */
async function json(args: string[], extra: Record<string, string> = {}): Promise<any> {
  const r = await drc(args, extra);
  if (r.code !== 0) throw new Error(`drc ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const lines = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

async function until<T>(probe: () => T | undefined, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const spyLog = (path: string) => (existsSync(path) ? lines(readFileSync(path, 'utf8')) : []);
const partNumber = (url: string) => Number(new URL(url).searchParams.get('partNumber'));

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

describe('drc login and configuration', () => {
  it('is the package bin: `npx drc --help` lists the commands and exits 0', async () => {
    const r = await new Promise<Run>((res) => {
      const child = spawn('npx', ['drc', '--help'], {
        cwd: ROOT,
        env: drcEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout?.on('data', (d: Buffer) => {
        stdout += d.toString();
      });
      child.once('close', (code, signal) => res({ code, signal, stdout, stderr: '' }));
    });
    expect(r.code).toBe(0);
    for (const cmd of [
      'login',
      'studies',
      'services',
      'releases',
      'events',
      'files',
      'signed-url',
      'dev-tokens',
    ])
      expect(r.stdout).toContain(cmd);
  });

  it('without a login, a command fails with one line on stderr and exit status 1', async () => {
    const r = await drc(['studies', 'ls']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('drc login');
  });

  it('login with no secret takes a dev token from the local IdP and keeps it in a 0600 file', async () => {
    const r = await json(['login', '--sub', 'cli-operator']);
    expect(r).toMatchObject({ method: 'dev_token', subject: 'cli-operator' });
    const file = join(configDir, 'credentials.json');
    expect(r.credentials_file).toBe(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const studies = await json(['studies', 'ls', '--limit', '2']);
    expect(studies.results).toHaveLength(2);
    study = studies.results.find((s: any) => !s.deleted).kf_id;
  });

  it('renews an expired token with what the login stored', async () => {
    const file = join(configDir, 'credentials.json');
    const before = JSON.parse(readFileSync(file, 'utf8'));
    writeFileSync(file, JSON.stringify({ ...before, expires_at: Date.now() - 1000 }), { mode: 0o600 });
    const studies = await json(['studies', 'ls', '--limit', '1']);
    expect(studies.results).toHaveLength(1);
    const after = JSON.parse(readFileSync(file, 'utf8'));
    expect(after.access_token).not.toBe(before.access_token);
    expect(after.expires_at).toBeGreaterThan(Date.now());
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('--token and DRC_TOKEN override the stored token', async () => {
    for (const r of [
      await drc(['studies', 'ls', '--token', 'not-a-jwt']),
      await drc(['studies', 'ls'], { DRC_TOKEN: 'not-a-jwt' }),
    ]) {
      expect(r.code).toBe(1);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/HTTP 401/);
    }
  });

  it('login with client credentials, and a wrong secret is an API error', async () => {
    const bad = await drc(['login', '--client-id', 'admin', '--client-secret', 'wrong']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^drc: .*401/);
    const ok = await json(['login', '--client-id', 'admin', '--client-secret', 'admin-local-secret']);
    expect(ok).toMatchObject({ method: 'client_credentials', subject: 'admin' });
    const stored = JSON.parse(readFileSync(join(configDir, 'credentials.json'), 'utf8'));
    expect(stored.client_id).toBe('admin');
    expect((await json(['studies', 'ls'])).count).toBeGreaterThan(0);
  });

  it('logout forgets the stored login', async () => {
    const file = join(configDir, 'credentials.json');
    expect(await json(['logout'])).toEqual({ logged_out: true, credentials_file: file });
    expect(existsSync(file)).toBe(false);
    expect((await drc(['studies', 'ls'])).code).toBe(1);
    await json(['login', '--client-id', 'admin', '--client-secret', 'admin-local-secret']);
  });

  it('usage errors exit 2, network errors exit 1, each with one line on stderr', async () => {
    for (const args of [['nonsense'], ['releases', 'show'], ['studies', 'ls', '--limit', 'many']]) {
      const r = await drc(args);
      expect(r.code, args.join(' ')).toBe(2);
    }
    const closed = await freePort();
    const down = await drc(['studies', 'ls'], { DRC_COORDINATOR_URL: `http://127.0.0.1:${closed}` });
    expect(down.code).toBe(1);
    expect(down.stderr.trim()).toBe(`drc: cannot reach http://127.0.0.1:${closed}: ECONNREFUSED`);
  });
});

describe('drc services, releases and events', () => {
  let serviceId: string;

  it('services add | ls | disable | enable', async () => {
    const added = await json(['services', 'add', 'cli stager', service.url, '--client-id', 'task-service']);
    // No --author: the author is whoever is signed in, the token's subject (here the `admin` client's login above).
    expect(added).toMatchObject({
      name: 'cli stager',
      enabled: true,
      client_id: 'task-service',
      author: 'admin',
    });
    expect(added.secret).toMatch(/^whsec_/);
    serviceSecrets.push(added.secret);
    const named = await json(['services', 'add', 'named', service.url, '--author', 'someone else']);
    expect(named.author).toBe('someone else');
    await json(['services', 'rm', named.kf_id]);
    serviceId = added.kf_id;
    expect((await json(['services', 'ls'])).results.map((s: any) => s.kf_id)).toContain(serviceId);
    expect(await json(['services', 'disable', serviceId])).toMatchObject({ enabled: false });
    expect(await json(['services', 'enable', serviceId])).toMatchObject({ enabled: true });
  });

  it('releases create --watch, without a TTY: one JSON line per change, to staged, exit 0', async () => {
    const r = await drc([
      'releases',
      'create',
      '--name',
      'CLI release',
      '--study',
      study,
      '--watch',
      '--interval',
      '0.3',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain(String.fromCharCode(27)); // no control codes
    const out = lines(r.stdout);
    expect(out[0].type).toBe('created');
    const id = out[0].release.kf_id;
    const states = out.filter((l) => l.type === 'release').map((l) => l.state);
    expect(states.at(-1)).toBe('staged');
    expect(out.some((l) => l.type === 'task' && l.service === 'cli stager' && l.state === 'staged')).toBe(
      true,
    );
    expect(out.filter((l) => l.type === 'event').map((l) => l.message)).toContain(
      `release ${id}, version 0.0.1 changed from running to staged`,
    );
    const summary = out.at(-1);
    expect(summary).toMatchObject({ type: 'summary', release: id, state: 'staged' });

    expect((await json(['releases', 'show', id])).state).toBe('staged');
    // A watch started now sees no event of the past; --from-start replays them.
    const late = lines((await drc(['releases', 'watch', id, '--interval', '0.3'])).stdout);
    expect(late.filter((l) => l.type === 'event')).toEqual([]);
    expect(late.at(-1)).toMatchObject({ type: 'summary', state: 'staged', events: 0 });
    const replay = lines((await drc(['releases', 'watch', id, '--from-start', '--interval', '0.3'])).stdout);
    expect(replay.filter((l) => l.type === 'event').map((l) => l.message)).toContain(
      `release ${id}, version 0.0.1 changed from running to staged`,
    );
    expect((await json(['releases', 'ls', '--state', 'staged'])).results.map((x: any) => x.kf_id)).toContain(
      id,
    );
    const events = await json(['events', 'ls', '--release', id, '--all']);
    expect(events.results.length).toBe(events.count);

    expect((await json(['releases', 'publish', id])).message).toContain(id);
    const watched = await drc(['releases', 'watch', id, '--interval', '0.3']);
    expect(watched.code, watched.stderr).toBe(0);
    expect(lines(watched.stdout).at(-1)).toMatchObject({ type: 'summary', state: 'published' });
  });

  it('a canceled release ends its watch with exit status 1', async () => {
    const created = await json(['releases', 'create', '--name', 'to cancel', '--study', study]);
    expect((await json(['releases', 'cancel', created.kf_id])).state).toMatch(/^cancel/);
    const watched = await drc(['releases', 'watch', created.kf_id, '--interval', '0.3']);
    expect(watched.code).toBe(1);
    expect(lines(watched.stdout).at(-1)).toMatchObject({ type: 'summary', state: 'canceled' });
  });

  it('cancels a release that is publishing only with --confirm-published, naming what has published', async () => {
    // A second service that takes an hour to publish keeps the release publishing once the stager has published.
    const slow = await startTaskService(
      {
        name: 'cli slow publisher',
        coordinatorUrl: stack.url.coordinator,
        callbackToken: clientCredentials(
          `${stack.url.idp}/oauth/token`,
          'task-service',
          'task-service-local-secret',
        ),
        auth: { mode: 'jwks', issuer: stack.url.idp, audience: ['task-services'] },
        stageSeconds: 1,
        publishSeconds: 3600,
        progressSteps: 1,
        failAt: [],
      },
      { port: 0, host: '127.0.0.1' },
    );
    const slowId = (
      await json(['services', 'add', 'cli slow publisher', slow.url, '--client-id', 'task-service'])
    ).kf_id;
    try {
      const created = await drc([
        'releases',
        'create',
        '--name',
        'half published',
        '--study',
        study,
        '--watch',
      ]);
      const id = lines(created.stdout)[0].release.kf_id;
      await json(['releases', 'publish', id]);
      // Polled straight from the API (the stack's admin token): a drc process per poll would be slow.
      const token = readFileSync(join(stack.dataDir, 'admin-token'), 'utf8').trim();
      const release = async () => {
        const res = await fetch(`${stack.url.coordinator}/releases/${id}`, {
          headers: { Authorization: `Bearer ${token}` },
        });
        return (await res.json()) as {
          state: string;
          tasks: { kf_id: string; service_name: string; state: string }[];
        };
      };
      const taskStates = async () =>
        Object.fromEntries((await release()).tasks.map((t) => [t.service_name, t.state]));
      for (let i = 0; (await taskStates())['cli stager'] !== 'published'; i++) {
        if (i > 300) throw new Error('the stager never published');
        await new Promise((r) => setTimeout(r, 100));
      }

      const stagerTask = (await release()).tasks.find((t) => t.service_name === 'cli stager');
      const refused = await drc(['releases', 'cancel', id]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        `release ${id} is publishing; already published: ${stagerTask?.kf_id} (cli stager).`,
      );
      expect(refused.stderr).toContain('run again with --confirm-published to cancel anyway (HTTP 409)');
      expect((await release()).state).toBe('publishing');

      // Stuck: publish sent again to the one task that has not published.
      const slowTask = (await release()).tasks.find((t) => t.service_name === 'cli slow publisher');
      const retried = await json(['releases', 'publish', id, '--retry']);
      expect(retried.tasks).toEqual([
        { task_id: slowTask?.kf_id, task_service_id: slowId, service_name: 'cli slow publisher' },
      ]);

      expect((await json(['releases', 'cancel', id, '--confirm-published'])).state).toBe('canceling');
      const watched = await drc(['releases', 'watch', id, '--interval', '0.3']);
      expect(lines(watched.stdout).at(-1)).toMatchObject({ type: 'summary', state: 'canceled' });
      expect(await taskStates()).toEqual({ 'cli stager': 'published', 'cli slow publisher': 'canceled' });
      // Canceled after one of two published: not published again, and drc says why.
      const again = await drc(['releases', 'publish', id, '--retry']);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/canceled after 1 of 2 task\(s\) had published/);
    } finally {
      await json(['services', 'rm', slowId]);
      await slow.stop();
    }
  });

  it('events tail prints one JSON line per event and exits 130 on Ctrl-C', async () => {
    const tail = start(['events', 'tail', '--backlog', '2', '--interval', '0.3']);
    let seen = '';
    tail.child.stdout?.on('data', (d: Buffer) => {
      seen += d.toString();
    });
    await until(() => (seen.trim().split('\n').length >= 2 ? true : undefined), 'two events');
    tail.child.kill('SIGINT');
    const r = await tail.done;
    expect(r.code).toBe(130);
    for (const e of lines(r.stdout)) expect(e.kf_id).toMatch(/^EV_/);
  });

  it('services rotate-secret gives a new secret; the old one signs during --grace', async () => {
    const rotated = await json(['services', 'rotate-secret', serviceId]);
    expect(rotated).toMatchObject({ kf_id: serviceId, secret: expect.stringMatching(/^whsec_/) });
    expect(rotated.secret).not.toBe(serviceSecrets[0]);
    expect(Date.parse(rotated.previous_secret_expires_at)).toBeGreaterThan(Date.now() + 23 * 3600_000);
    const now = await json(['services', 'rotate-secret', serviceId, '--grace', '0']);
    expect(now.previous_secret_expires_at).toBeNull();
    serviceSecrets.splice(0, serviceSecrets.length, now.secret);
    const bad = await drc(['services', 'rotate-secret', serviceId, '--grace', 'soon']);
    expect(bad.code).toBe(2);
  });

  it('services add --create-client answers the client made for the service, once', async () => {
    const added = await json(['services', 'add', 'own client', service.url, '--create-client', '--disabled']);
    expect(added).toMatchObject({
      client_id: expect.stringMatching(/^ts-/),
      client_secret: expect.any(String),
      secret: expect.stringMatching(/^whsec_/),
    });
    const token = await fetch(`${stack.url.idp}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: added.client_id,
        client_secret: added.client_secret,
      }),
    });
    expect(token.status).toBe(200);
    const both = await drc(['services', 'add', 'x', service.url, '--create-client', '--client-id', 'y']);
    expect(both.code).toBe(2);
    expect(await json(['services', 'rm', added.kf_id])).toEqual({ deleted: added.kf_id });
  });

  it('services add --create-client --secret-to file: writes the secrets where the kit reads them; rotate-secret keeps the old one for its grace', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'drc-secret-to-')), 'stager.secret.json');
    const added = await json([
      'services',
      'add',
      'secret to file',
      service.url,
      '--create-client',
      '--disabled',
      '--secret-to',
      `file:${path}`,
    ]);
    // The answer names where the secrets went, and shows none of them.
    expect(added).toMatchObject({ secret_to: `file:${path}`, client_id: expect.stringMatching(/^ts-/) });
    expect(JSON.stringify(added)).not.toMatch(/whsec_/);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const source = fileSecretSource(path);
    const first = await source.read();
    expect(first).toMatchObject({ clientId: added.client_id, taskServiceId: added.kf_id });
    expect(first.signing).toEqual([expect.stringMatching(/^whsec_/)]);
    // The client written is the one the local identity provider made.
    const token = await fetch(`${stack.url.idp}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: first.clientId ?? '',
        client_secret: first.clientSecret ?? '',
      }),
    });
    expect(token.status).toBe(200);
    const rotated = await json(['services', 'rotate-secret', added.kf_id, '--secret-to', `file:${path}`]);
    expect(rotated.secret_to).toBe(`file:${path}`);
    const after = await source.read();
    expect(after.signing).toEqual([expect.stringMatching(/^whsec_/), first.signing[0]]);
    expect(after.signing[0]).not.toBe(first.signing[0]);
    expect(after).toMatchObject({ clientId: first.clientId, clientSecret: first.clientSecret });
    const bad = await drc(['services', 'rotate-secret', added.kf_id, '--secret-to', 'no spaces please']);
    expect(bad.code).toBe(2);
    await json(['services', 'rm', added.kf_id]);
  });

  it('services quarantine | release: disabled and its reports refused, then enabled again', async () => {
    const id = (await json(['services', 'add', 'cli quarantined', service.url])).kf_id;
    const q = await json(['services', 'quarantine', id, '--reason', 'drill']);
    expect(q).toMatchObject({ kf_id: id, enabled: false, quarantined: true, quarantine_reason: 'drill' });
    expect(q.failed_tasks).toEqual([]);
    expect((await json(['services', 'ls'])).results.find((x: any) => x.kf_id === id)).toMatchObject({
      quarantined: true,
    });
    expect(await json(['services', 'release', id])).toMatchObject({
      kf_id: id,
      enabled: true,
      quarantined: false,
    });
    const twice = await drc(['services', 'release', id]);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('409');
    await json(['services', 'rm', id]);
  });

  it('maintenance on | off: new releases refused with 503 while it is on; drc --version names the release', async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    const version = await drc(['--version']);
    expect(version.stdout.trim()).toBe(pkg.version);
    const health = (await (await fetch(`${stack.url.coordinator}/health`)).json()) as { version: string };
    expect(health.version).toBe(pkg.version);
    try {
      expect(await json(['maintenance', 'on', '--reason', 'upgrade', '--retry-after', '120'])).toMatchObject({
        on: true,
        reason: 'upgrade',
        retry_after_seconds: 120,
      });
      expect(await json(['maintenance'])).toMatchObject({ on: true });
      const refused = await drc(['releases', 'create', '--name', 'during maintenance', '--study', study]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('503');
    } finally {
      expect(await json(['maintenance', 'off'])).toMatchObject({ on: false });
    }
  });

  it('services rm deletes it', async () => {
    expect(await json(['services', 'rm', serviceId])).toEqual({ deleted: serviceId });
    expect((await json(['services', 'ls'])).results.map((s: any) => s.kf_id)).not.toContain(serviceId);
  });
});

describe('drc files, signed URLs and developer tokens', () => {
  it('uploads a small file in one PUT, lists it, downloads it, and signs a URL for it', async () => {
    const bytes = randomBytes(200_000);
    writeFileSync(join(work, 'small.bin'), bytes);
    const up = await json(['files', 'upload', study, join(work, 'small.bin')]);
    expect(up.version).toMatchObject({ state: 'available', size: bytes.length, sha256: sha256(bytes) });
    expect((await json(['files', 'ls', study])).results.map((f: any) => f.kf_id)).toContain(up.file_id);

    const down = await json(['files', 'download', study, up.file_id, '-o', join(work, 'small.out')]);
    expect(down).toMatchObject({ sha256: sha256(bytes), resumed_from: 0 });
    expect(readFileSync(join(work, 'small.out')).equals(bytes)).toBe(true);

    const signed = await json(['signed-url', study, up.file_id]);
    const res = await fetch(signed.url);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('dev-tokens create | ls | rm', async () => {
    // Without a study choice and without a terminal to ask on: a usage error that says what to give.
    const unchosen = await drc(['dev-tokens', 'create', 'cli-unchosen']);
    expect(unchosen.code).toBe(2);
    expect(unchosen.stderr).toMatch(/--study <id…> or --all-studies/);
    const before = Date.now();
    const created = await json(['dev-tokens', 'create', 'cli-laptop', '--all-studies']);
    expect(created.name).toBe('cli-laptop');
    expect(created.token.length).toBeGreaterThan(20);
    const listed = await json(['dev-tokens', 'ls']);
    const mine = listed.results.find((t: any) => t.name === 'cli-laptop');
    expect(mine.token).not.toBe(created.token);
    expect(await json(['dev-tokens', 'rm', 'cli-laptop'])).toEqual({ deleted: 'cli-laptop' });
    expect((await json(['dev-tokens', 'ls'])).results.map((t: any) => t.name)).not.toContain('cli-laptop');
    // Every study, as chosen, for 30 days: the CLI's default expiry.
    expect(created.studies).toBeNull();
    expect(Date.parse(created.expires_at) - before).toBeGreaterThan(30 * 86_400_000 - 60_000);
    expect(Date.parse(created.expires_at) - before).toBeLessThan(30 * 86_400_000 + 60_000);
    const forever = await json(['dev-tokens', 'create', 'cli-forever', '--all-studies', '--no-expiry']);
    expect(forever).toMatchObject({ expires_at: null, studies: null });
    await json(['dev-tokens', 'rm', 'cli-forever']);
  });

  it('dev-tokens create --expires-in --study narrows the token', async () => {
    const before = Date.now();
    const created = await json([
      'dev-tokens',
      'create',
      'cli-narrow',
      '--expires-in',
      '3600',
      '--study',
      'SD_AAAAAAA1',
      'SD_AAAAAAA2',
    ]);
    expect(created.studies).toEqual(['SD_AAAAAAA1', 'SD_AAAAAAA2']);
    expect(Date.parse(created.expires_at) - before).toBeGreaterThan(3500_000);
    expect(Date.parse(created.expires_at) - before).toBeLessThan(3700_000);
    const at = await json([
      'dev-tokens',
      'create',
      'cli-until',
      '--all-studies',
      '--expires-at',
      '2099-01-01T00:00:00Z',
    ]);
    expect(at.expires_at).toBe('2099-01-01T00:00:00.000000Z');
    await json(['dev-tokens', 'rm', 'cli-narrow']);
    await json(['dev-tokens', 'rm', 'cli-until']);
  });

  const big = randomBytes(28 * MiB);
  let bigFile: string;

  it('an upload killed halfway resumes with --resume without sending the finished parts again', async () => {
    const path = join(work, 'big.bin');
    writeFileSync(path, big);
    const log1 = join(work, 'spy-upload-1.jsonl');
    const first = start(['files', 'upload', study, path], {
      NODE_OPTIONS: `--import=${SPY}`,
      DRC_SPY_LOG: log1,
      DRC_SPY_PUT_DELAY_MS: '400',
    });
    // Killed once two parts are done (their ETags are in the resume state), with others still in flight.
    const uploads = join(configDir, 'uploads');
    await until(() => {
      const files = existsSync(uploads) ? readdirSync(uploads).filter((f) => f.endsWith('.json')) : [];
      if (files.length !== 1) return undefined;
      try {
        const state = JSON.parse(readFileSync(join(uploads, files[0]), 'utf8'));
        return Object.keys(state.parts).length >= 2 ? true : undefined;
      } catch {
        return undefined;
      }
    }, 'two finished parts');
    first.child.kill('SIGKILL');
    await first.done;
    const finished = spyLog(log1)
      .filter((l) => l.method === 'PUT' && l.status === 200)
      .map((l) => partNumber(l.url));
    expect(finished.length).toBeGreaterThanOrEqual(2);
    expect(finished.length).toBeLessThan(6);

    const log2 = join(work, 'spy-upload-2.jsonl');
    const resumed = await json(['files', 'upload', study, path, '--resume'], {
      NODE_OPTIONS: `--import=${SPY}`,
      DRC_SPY_LOG: log2,
    });
    const sentAgain = spyLog(log2)
      .filter((l) => l.method === 'PUT')
      .map((l) => partNumber(l.url));
    expect(sentAgain.filter((n) => finished.includes(n))).toEqual([]);
    expect([...finished, ...sentAgain].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(resumed.parts_resumed).toBe(finished.length);
    expect(resumed.version).toMatchObject({ state: 'available', size: big.length, sha256: sha256(big) });
    expect(readdirSync(uploads).filter((f) => f.endsWith('.json'))).toEqual([]);
    bigFile = resumed.file_id;
  });

  it('a download interrupted halfway resumes with Range and checks the SHA-256', async () => {
    const out = join(work, 'downloads', 'big.out');
    mkdirSync(join(work, 'downloads'));
    const log1 = join(work, 'spy-download-1.jsonl');
    const first = start(['files', 'download', study, bigFile, '-o', out], {
      NODE_OPTIONS: `--import=${SPY}`,
      DRC_SPY_LOG: log1,
      DRC_SPY_CHUNK_DELAY_MS: '10',
    });
    const partFile = () => readdirSync(join(work, 'downloads')).find((f) => f.endsWith('.part'));
    await until(() => {
      const p = partFile();
      return p && statSync(join(work, 'downloads', p)).size > 4 * MiB ? true : undefined;
    }, 'a partial download');
    first.child.kill('SIGKILL');
    await first.done;
    const kept = statSync(join(work, 'downloads', partFile()!)).size;
    expect(kept).toBeLessThan(big.length);
    expect(existsSync(out)).toBe(false);

    const log2 = join(work, 'spy-download-2.jsonl');
    const r = await json(['files', 'download', study, bigFile, '-o', out], {
      NODE_OPTIONS: `--import=${SPY}`,
      DRC_SPY_LOG: log2,
    });
    const s3Get = spyLog(log2).find((l) => /X-Amz-Signature/i.test(l.url));
    expect(s3Get).toMatchObject({ range: `bytes=${kept}-`, status: 206 });
    expect(r).toMatchObject({ resumed_from: kept, size: big.length, sha256: sha256(big) });
    expect(readFileSync(out).equals(big)).toBe(true);
    expect(partFile()).toBeUndefined();
  });
});

describe('drc with a whole study', () => {
  const folder = () => join(work, 'folder');
  const idsByName = async (name: string) =>
    (await json(['files', 'ls', study, '--all'])).results.filter((f: any) => f.name === name);

  it('uploads a folder several files at a time; run again, it sends nothing', async () => {
    mkdirSync(folder());
    writeFileSync(join(folder(), 'notes.txt'), 'first notes\n');
    writeFileSync(join(folder(), 'table.tsv'), randomBytes(70_000));
    writeFileSync(join(folder(), 'empty.txt'), '');
    const first = await json(['files', 'upload', study, folder(), '-j', '2']);
    expect(first.uploaded.map((u: any) => u.path.split('/').pop()).sort()).toEqual([
      'empty.txt',
      'notes.txt',
      'table.tsv',
    ]);
    expect(first.failed).toEqual([]);
    const again = await json(['files', 'upload', study, folder()]);
    expect(again).toMatchObject({ uploaded: [], failed: [] });
    expect(again.present).toHaveLength(3);
  });

  it('downloads a zero-byte file', async () => {
    const [empty] = await idsByName('empty.txt');
    const out = join(work, 'empty.out');
    const r = await json(['files', 'download', study, empty.kf_id, '-o', out]);
    expect(r).toMatchObject({ size: 0, sha256: sha256(Buffer.alloc(0)) });
    expect(statSync(out).size).toBe(0);
  });

  it('refuses a second file of a name in the study, unless told; --file only for a file of that study', async () => {
    writeFileSync(join(folder(), 'notes.txt'), 'other notes\n');
    const refused = await drc(['files', 'upload', study, join(folder(), 'notes.txt')]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/a file named "notes.txt" is already in study .*--allow-duplicate/);
    const [notes] = await idsByName('notes.txt');
    const other = (await json(['studies', 'ls', '--limit', '10'])).results.find(
      (s: any) => s.kf_id !== study,
    );
    const wrongStudy = await drc([
      'files',
      'upload',
      other.kf_id,
      join(folder(), 'notes.txt'),
      '--file',
      notes.kf_id,
    ]);
    expect(wrongStudy.code).toBe(2);
    expect(wrongStudy.stderr).toContain(`file ${notes.kf_id} belongs to study ${study}`);
    const version = await json([
      'files',
      'upload',
      study,
      join(folder(), 'notes.txt'),
      '--file',
      notes.kf_id,
    ]);
    expect(version.file_id).toBe(notes.kf_id);
    writeFileSync(join(folder(), 'notes.txt'), 'third notes\n');
    await json(['files', 'upload', study, join(folder(), 'notes.txt'), '--allow-duplicate']);
    expect(await idsByName('notes.txt')).toHaveLength(2);
    // --name: the name the file gets, and so the name a download of it is written under (below)
    await json(['files', 'upload', study, join(folder(), 'table.tsv'), '--name', 'renamed.tsv']);
  });

  it('continues an interrupted single PUT by default: the same file, never a second one', async () => {
    const path = join(work, 'single.bin');
    const bytes = randomBytes(2 * MiB);
    writeFileSync(path, bytes);
    const first = start(['files', 'upload', study, path], {
      NODE_OPTIONS: `--import=${SPY}`,
      DRC_SPY_PUT_DELAY_MS: '60000',
    });
    const uploads = join(configDir, 'uploads');
    await until(() => (readdirSync(uploads).some((f) => f.endsWith('.json')) ? true : undefined), 'a state');
    first.child.kill('SIGKILL');
    await first.done;
    const again = await json(['files', 'upload', study, path]);
    expect(again.version).toMatchObject({ state: 'available', sha256: sha256(bytes) });
    const files = await idsByName('single.bin');
    expect(files.map((f: any) => f.kf_id)).toEqual([again.file_id]);
    expect(readdirSync(uploads).filter((f) => f.endsWith('.json'))).toEqual([]);
  });

  it('downloads the whole study; broken midway it resumes with Range; a run with nothing to do rewrites nothing', async () => {
    const dir = join(work, 'study-copy');
    const log1 = join(work, 'spy-study-1.jsonl');
    const first = start(['files', 'download', study, '--all', '-d', dir, '-j', '2'], {
      NODE_OPTIONS: `--import=${SPY}`,
      DRC_SPY_LOG: log1,
      DRC_SPY_CHUNK_DELAY_MS: '10',
    });
    const part = () => (existsSync(dir) ? readdirSync(dir).find((f) => f.endsWith('.part')) : undefined);
    await until(() => {
      const p = part();
      return p && statSync(join(dir, p)).size > 4 * MiB ? true : undefined;
    }, 'a partial download');
    first.child.kill('SIGKILL');
    await first.done;
    const kept = statSync(join(dir, part()!)).size;

    const log2 = join(work, 'spy-study-2.jsonl');
    const r = await json(['files', 'download', study, '--all', '-d', dir], {
      NODE_OPTIONS: `--import=${SPY}`,
      DRC_SPY_LOG: log2,
    });
    expect(r.failed).toEqual([]);
    expect(spyLog(log2).find((l) => l.range === `bytes=${kept}-`)).toMatchObject({ status: 206 });
    expect(r.downloaded.find((d: any) => d.resumed_from === kept)).toBeDefined();
    expect(readFileSync(join(dir, 'big.bin')).equals(readFileSync(join(work, 'big.bin')))).toBe(true);
    expect(part()).toBeUndefined();
    expect(readFileSync(join(dir, 'renamed.tsv')).equals(readFileSync(join(folder(), 'table.tsv')))).toBe(
      true,
    );
    // Two files named notes.txt, side by side: the oldest keeps the name, the other gets its file id.
    const notes = (await idsByName('notes.txt')).map((f: any) => `notes.${f.kf_id}.txt`);
    const written = readdirSync(dir).filter((f) => f.startsWith('notes.'));
    expect(written).toHaveLength(2);
    expect(written).toContain('notes.txt');
    expect(written.filter((f) => f === 'notes.txt' || notes.includes(f))).toEqual(written);

    const stamps = () => readdirSync(dir).map((f) => `${f} ${statSync(join(dir, f)).mtimeMs}`);
    const before = stamps();
    const noop = await json(['files', 'download', study, '--all', '-d', dir]);
    expect(noop.downloaded).toEqual([]);
    expect(noop.present).toBe(r.downloaded.length + r.present);
    expect(stamps()).toEqual(before);
  });

  it('drc token prints the bearer token the other commands send', async () => {
    const r = await drc(['token']);
    expect(r.code).toBe(0);
    // Read after the run: a token about to expire is renewed (and stored) first.
    const stored = JSON.parse(readFileSync(join(configDir, 'credentials.json'), 'utf8'));
    expect(r.stdout).toBe(`${stored.access_token}\n`);
  });
});
