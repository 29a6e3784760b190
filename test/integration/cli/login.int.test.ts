import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CLIENTS } from '#local/idp/clients.js';
import { type Idp, startIdp } from '#local/idp/server.js';

/**
 * `drc login` signing a person in (authorization code + PKCE, a loopback redirect) against the local identity
 * provider, the same code that signs in through Cognito's managed login: drc prints the URL (`--no-browser`), the test
 * plays the browser (the development sign-in form, then the redirect back to drc), and drc keeps the tokens with their
 * refresh in its 0600 credentials file. A small stand-in for the coordinator records the bearer tokens drc sends.
 */
const ROOT = resolve(import.meta.dirname, '../../..');
const NODE = join(ROOT, 'node_modules/.bin/node');
const work = mkdtempSync(join(tmpdir(), 'drc-login-'));
let idp: Idp;
let api: Server;
let apiUrl: string;
const bearers: string[] = [];

beforeAll(async () => {
  idp = await startIdp({
    port: 0,
    host: '127.0.0.1',
    dataDir: join(work, 'idp'),
    audience: 'release-coordinator',
    clients: DEFAULT_CLIENTS,
  });
  api = createServer((req, res) => {
    bearers.push(String(req.headers.authorization ?? ''));
    res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"count":0,"results":[],"next":null}');
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await idp?.stop();
  await new Promise((r) => api?.close(r));
  rmSync(work, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function drc(args: string[], configDir: string, extra: Record<string, string> = {}) {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DRC_IDP_URL: idp.url,
    DRC_COORDINATOR_URL: apiUrl,
    DRC_CONFIG_DIR: configDir,
    ...extra,
  };
  for (const key of ['DRC_TOKEN', 'DRC_ISSUER', 'DRC_CLIENT_ID']) if (!(key in extra)) delete env[key];
  const child = spawn(NODE, [join(ROOT, 'bin/drc.mjs'), ...args], {
    cwd: work,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let onStderr: () => void = () => {};
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    onStderr();
  });
  const done = new Promise<Run>((r) => child.once('close', (code) => r({ code, stdout, stderr })));
  /** The sign-in URL drc prints, as soon as it does. */
  const printedUrl = new Promise<string>((resolveUrl, reject) => {
    onStderr = () => {
      const m = /Open this URL to sign in: (\S+)/.exec(stderr);
      if (m) resolveUrl(m[1]);
    };
    void done.then((r) => reject(new Error(`drc exited ${r.code} before printing a URL: ${r.stderr}`)));
  });
  // Only the runs that sign in wait for a URL; the others' rejection is nobody's business.
  printedUrl.catch(() => {});
  return { child, done, printedUrl };
}

/** What a browser does with the URL: shows the sign-in form, submits it, follows the redirect back to drc. */
async function signInAs(
  url: string,
  typed: { sub: string; roles: string; groups: string },
): Promise<Response> {
  const form = await fetch(url);
  expect(form.status).toBe(200);
  const html = await form.text();
  const hidden = Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
      m[1],
      m[2].replace(/&quot;/g, '"').replace(/&amp;/g, '&'),
    ]),
  );
  const submitted = await fetch(new URL('/authorize', url), {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...hidden, ...typed }).toString(),
    redirect: 'manual',
  });
  expect(submitted.status).toBe(302);
  return fetch(submitted.headers.get('location') as string);
}

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'));

describe('drc login: a person signs in', () => {
  const configDir = join(work, 'config');
  const file = join(configDir, 'credentials.json');

  it('--no-browser prints the sign-in URL (PKCE S256, a loopback redirect) and keeps the tokens with their refresh in a 0600 file', async () => {
    const run = drc(['login', '--no-browser'], configDir);
    const url = new URL(await run.printedUrl);
    expect(`${url.origin}${url.pathname}`).toBe(`${idp.url}/authorize`);
    expect(url.searchParams.get('response_type')).toBe('code');
    expect(url.searchParams.get('client_id')).toBe('drc');
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.get('state')).toBeTruthy();
    expect(url.searchParams.get('redirect_uri')).toMatch(/^http:\/\/localhost:5368[2-5]\/callback$/);

    const back = await signInAs(url.href, { sub: 'oncall', roles: 'admin', groups: 'SD_AAAAAAAA' });
    expect(back.status).toBe(200);
    expect(await back.text()).toContain('Signed in');
    const r = await run.done;
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      method: 'authorization_code',
      subject: 'oncall',
      refreshable: true,
      credentials_file: file,
    });

    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    expect(stored).toMatchObject({ method: 'authorization_code', issuer: idp.issuer, client_id: 'drc' });
    expect(claimsOf(stored.access_token)).toMatchObject({
      sub: 'oncall',
      roles: ['admin'],
      groups: ['SD_AAAAAAAA'],
    });
    expect(typeof stored.refresh_token).toBe('string');

    // The commands use the token as it is.
    const ls = await drc(['studies', 'ls'], configDir).done;
    expect(ls.code, ls.stderr).toBe(0);
    expect(bearers.at(-1)).toBe(`Bearer ${stored.access_token}`);
  });

  it('renews an expired access token with the refresh token, and asks for a new sign-in once that is refused', async () => {
    const before = JSON.parse(readFileSync(file, 'utf8'));
    writeFileSync(file, JSON.stringify({ ...before, expires_at: Date.now() - 1000 }), { mode: 0o600 });
    const renewed = await drc(['studies', 'ls'], configDir).done;
    expect(renewed.code, renewed.stderr).toBe(0);
    const after = JSON.parse(readFileSync(file, 'utf8'));
    expect(after.access_token).not.toBe(before.access_token);
    expect(after.expires_at).toBeGreaterThan(Date.now());
    expect(claimsOf(after.access_token)).toMatchObject({ sub: 'oncall', roles: ['admin'] });
    expect(bearers.at(-1)).toBe(`Bearer ${after.access_token}`);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    writeFileSync(file, JSON.stringify({ ...after, expires_at: 0, refresh_token: 'revoked' }), {
      mode: 0o600,
    });
    const refused = await drc(['studies', 'ls'], configDir).done;
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe('drc: the sign-in has expired: run `drc login` again');
  });

  it('signs in by default once DRC_ISSUER names the provider; a dev token and client credentials stay as they were', async () => {
    const other = join(work, 'config-default');
    const run = drc(['login'], other, { DRC_ISSUER: idp.url, BROWSER: 'true' });
    const url = await run.printedUrl;
    await signInAs(url, { sub: 'second', roles: '', groups: '' });
    const r = await run.done;
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ method: 'authorization_code', subject: 'second' });

    const dev = await drc(['login', '--sub', 'dev-person'], join(work, 'config-dev')).done;
    expect(JSON.parse(dev.stdout)).toMatchObject({ method: 'dev_token', subject: 'dev-person' });
    const machine = await drc(
      ['login', '--client-id', 'admin', '--client-secret', 'admin-local-secret'],
      join(work, 'config-cc'),
    ).done;
    expect(JSON.parse(machine.stdout)).toMatchObject({ method: 'client_credentials', subject: 'admin' });
  });
});
