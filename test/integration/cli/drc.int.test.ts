import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clientCredentials, startTaskService } from '#examples/task-service/service.js';
import { freePort } from '#local/dynamodb-local.js';
import { fileSecretSource } from '#packages/task-service/src/secrets.js';
import {
  configDir,
  drc,
  drcEnv,
  json,
  lines,
  ROOT,
  type Run,
  service,
  serviceSecrets,
  setStudy,
  stack,
  start,
  study,
  until,
  useDrcStack,
} from '#test/helpers/drc-harness.js';

/**
 * `drc` as a user runs it, against `npm start` in a child process (test/helpers/drc-harness.ts): signing in, the
 * configuration, task services, releases and events. Its files and whole studies: drc-files.int.test.ts.
 */
useDrcStack();

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
    setStudy(studies.results.find((s: any) => !s.deleted).kf_id);
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
