import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenVerifier } from '#functions/shared/auth.js';
import { FakeClock } from '#functions/shared/clock.js';
import { CODE_TTL_SECONDS } from '#local/idp/authorize.js';
import { DEFAULT_CLIENTS } from '#local/idp/clients.js';
import { REFRESH_TTL_SECONDS } from '#local/idp/refresh-token.js';
import { type Idp, startIdp } from '#local/idp/server.js';

// The development sign-in (authorization code + PKCE) of the local identity provider, over real HTTP, with the
// issued access tokens checked by the verifier the functions use.
const dataDir = mkdtempSync(join(tmpdir(), 'idp-code-'));
const clock = new FakeClock(Date.now());
const DASHBOARD = 'http://127.0.0.1:3005';
const REDIRECT = `${DASHBOARD}/`;
let idp: Idp;

beforeAll(async () => {
  idp = await startIdp({
    port: 0,
    host: '127.0.0.1',
    dataDir,
    audience: 'release-coordinator',
    clients: DEFAULT_CLIENTS,
    corsOrigins: [DASHBOARD],
    redirectUris: ['https://dashboard.example.test/'],
    clock,
  });
});
afterAll(async () => {
  await idp.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const verifierOf = () => randomBytes(32).toString('base64url');
const challengeOf = (v: string) => createHash('sha256').update(v).digest('base64url');
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

interface AuthorizeRequest {
  client_id: string;
  redirect_uri: string;
  response_type?: string;
  state?: string;
  nonce?: string;
  scope?: string;
  code_challenge?: string;
  code_challenge_method?: string;
}

const authorizeRequest = (verifier: string, extra: Partial<AuthorizeRequest> = {}): AuthorizeRequest => ({
  client_id: 'dashboard',
  redirect_uri: REDIRECT,
  response_type: 'code',
  state: 'st-123',
  nonce: 'n-456',
  scope: 'openid',
  code_challenge: challengeOf(verifier),
  code_challenge_method: 'S256',
  ...extra,
});

const query = (p: object) => new URLSearchParams(p as Record<string, string>).toString();

/** Submits the sign-in form as a browser would: the hidden fields it rendered, plus what the user typed. */
async function signIn(
  request: AuthorizeRequest,
  typed: { sub: string; roles?: string; groups?: string },
): Promise<Response> {
  const page = await fetch(`${idp.url}/authorize?${query(request)}`);
  expect(page.status).toBe(200);
  const html = await page.text();
  const hidden = Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
      m[1],
      m[2].replace(/&quot;/g, '"').replace(/&amp;/g, '&'),
    ]),
  );
  return fetch(`${idp.url}/authorize`, {
    method: 'POST',
    headers: FORM,
    body: query({ ...hidden, sub: typed.sub, roles: typed.roles ?? '', groups: typed.groups ?? '' }),
    redirect: 'manual',
  });
}

async function exchange(fields: Record<string, string>) {
  const res = await fetch(`${idp.url}/oauth/token`, { method: 'POST', headers: FORM, body: query(fields) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'));

async function codeFor(verifier: string, typed = { sub: 'alice', roles: 'admin', groups: '' }) {
  const res = await signIn(authorizeRequest(verifier), typed);
  expect(res.status).toBe(302);
  return new URL(res.headers.get('location') as string).searchParams.get('code') as string;
}

describe('discovery', () => {
  it('advertises the authorization endpoint, the code flow and PKCE S256 next to client credentials', async () => {
    const body = (await (await fetch(`${idp.url}/.well-known/openid-configuration`)).json()) as Record<
      string,
      unknown
    >;
    expect(body).toMatchObject({
      authorization_endpoint: `${idp.issuer}/authorize`,
      token_endpoint: `${idp.issuer}/oauth/token`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['client_credentials', 'authorization_code', 'refresh_token'],
    });
    expect(body.token_endpoint_auth_methods_supported).toContain('none');
  });
});

describe('GET /authorize', () => {
  it('shows a sign-in form with the inputs sub, roles and groups and a submit button', async () => {
    const res = await fetch(`${idp.url}/authorize?${query(authorizeRequest(verifierOf()))}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const html = await res.text();
    expect(html).toMatch(/<form method="post" action="\/authorize">/);
    for (const name of ['sub', 'roles', 'groups']) expect(html).toContain(`name="${name}"`);
    expect(html).toContain('<button type="submit">');
    expect(html).toContain('name="state" value="st-123"');
  });

  it('refuses an unknown redirect URI or a client-credentials client on the page itself, never redirecting', async () => {
    for (const bad of [
      { redirect_uri: 'https://evil.example/cb' },
      { redirect_uri: `${DASHBOARD}/#frag` },
      { client_id: 'coordinator' },
    ]) {
      const res = await fetch(`${idp.url}/authorize?${query(authorizeRequest(verifierOf(), bad))}`, {
        redirect: 'manual',
      });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text()).toContain('role="alert"');
    }
    // A configured non-loopback URI (the dashboard served elsewhere) is allowed.
    const configured = await fetch(
      `${idp.url}/authorize?${query(authorizeRequest(verifierOf(), { redirect_uri: 'https://dashboard.example.test/' }))}`,
    );
    expect(configured.status).toBe(200);
  });

  it('sends requests without PKCE S256 or with another response type back with an OAuth error', async () => {
    for (const [bad, error] of [
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ code_challenge: '' }, 'invalid_request'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
    ] as const) {
      const res = await fetch(`${idp.url}/authorize?${query(authorizeRequest(verifierOf(), bad))}`, {
        redirect: 'manual',
      });
      expect(res.status).toBe(302);
      const back = new URL(res.headers.get('location') as string);
      expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
      expect(back.searchParams.get('error')).toBe(error);
      expect(back.searchParams.get('state')).toBe('st-123');
    }
  });
});

describe('sign-in and the code exchange', () => {
  it('redirects back with a code and the state, and the code buys tokens the APIs accept, with the typed roles', async () => {
    const verifier = verifierOf();
    const res = await signIn(authorizeRequest(verifier), {
      sub: 'alice',
      roles: ' admin, auditor ,admin',
      groups: 'SD_AAAAAAAA,SD_BBBBBBBB',
    });
    expect(res.status).toBe(302);
    const back = new URL(res.headers.get('location') as string);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(back.searchParams.get('state')).toBe('st-123');
    const code = back.searchParams.get('code') as string;
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const tokens = await exchange({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: 'dashboard',
      code_verifier: verifier,
    });
    expect(tokens.status).toBe(200);
    expect(tokens.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'openid' });

    const principal = await createTokenVerifier({
      AUTH_ISSUER: idp.issuer,
      AUTH_AUDIENCE: ['release-coordinator'],
      AUTH_JWKS_URI: idp.jwksUri,
      AUTH_ROLES_CLAIMS: ['roles', 'cognito:groups', 'scope'],
      AUTH_GROUPS_CLAIMS: ['groups'],
      AUTH_ADMIN_ROLE: 'admin',
      AUTH_SERVICE_ROLE: 'service',
      AUTH_GRACE_SECONDS: 0,
    }).verify(tokens.body.access_token);
    expect(principal.sub).toBe('alice');
    expect(principal.isAdmin).toBe(true);
    expect(principal.groups).toEqual(['SD_AAAAAAAA', 'SD_BBBBBBBB']);
    expect(claimsOf(tokens.body.access_token)).toMatchObject({
      aud: 'release-coordinator',
      roles: ['admin', 'auditor'],
      client_id: 'dashboard',
    });

    const id = claimsOf(tokens.body.id_token);
    expect(id).toMatchObject({
      iss: idp.issuer,
      aud: 'dashboard',
      sub: 'alice',
      nonce: 'n-456',
      roles: ['admin', 'auditor'],
    });
  });

  it('also takes the request parameters from the URL when the form posts only what was typed', async () => {
    const verifier = verifierOf();
    const res = await fetch(`${idp.url}/authorize?${query(authorizeRequest(verifier))}`, {
      method: 'POST',
      headers: FORM,
      body: query({ sub: 'carl', roles: 'admin', groups: '' }),
      redirect: 'manual',
    });
    expect(res.status).toBe(302);
    const back = new URL(res.headers.get('location') as string);
    expect(back.searchParams.get('state')).toBe('st-123');
    const tokens = await exchange({
      grant_type: 'authorization_code',
      code: back.searchParams.get('code') as string,
      redirect_uri: REDIRECT,
      client_id: 'dashboard',
      code_verifier: verifier,
    });
    expect(claimsOf(tokens.body.access_token)).toMatchObject({ sub: 'carl', roles: ['admin'] });
  });

  it('a reader gets exactly what was typed: no roles, no groups', async () => {
    const verifier = verifierOf();
    const code = await codeFor(verifier, { sub: 'rita', roles: '', groups: '' });
    const tokens = await exchange({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: 'dashboard',
      code_verifier: verifier,
    });
    expect(claimsOf(tokens.body.access_token)).toMatchObject({ sub: 'rita', roles: [], groups: [] });
  });

  it('asks again, with an error, when the user name is empty', async () => {
    const res = await signIn(authorizeRequest(verifierOf()), { sub: '  ', roles: 'admin' });
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(html).toContain('role="alert"');
    expect(html).toContain('name="roles" value="admin"');
  });

  it('refuses a wrong code_verifier, and the code is spent by that attempt', async () => {
    const verifier = verifierOf();
    const code = await codeFor(verifier);
    const base = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: 'dashboard' };
    const wrong = await exchange({ ...base, code_verifier: verifierOf() });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.code).toBe('invalid_grant');
    const retry = await exchange({ ...base, code_verifier: verifier });
    expect(retry.status).toBe(400);
    expect(retry.body.error.code).toBe('invalid_grant');
  });

  it('a code works once, only for its client and redirect URI, and only until it expires', async () => {
    const verifier = verifierOf();
    const base = { grant_type: 'authorization_code', client_id: 'dashboard', code_verifier: verifier };
    const once = await codeFor(verifier);
    expect((await exchange({ ...base, code: once, redirect_uri: REDIRECT })).status).toBe(200);
    expect((await exchange({ ...base, code: once, redirect_uri: REDIRECT })).body.error.code).toBe(
      'invalid_grant',
    );

    const other = await codeFor(verifier);
    expect((await exchange({ ...base, code: other, redirect_uri: `${DASHBOARD}/x` })).status).toBe(400);
    const otherClient = await codeFor(verifier);
    expect(
      (await exchange({ ...base, client_id: 'someone-else', code: otherClient, redirect_uri: REDIRECT }))
        .status,
    ).toBe(400);

    const late = await codeFor(verifier);
    clock.advance(CODE_TTL_SECONDS * 1000);
    const expired = await exchange({ ...base, code: late, redirect_uri: REDIRECT });
    expect(expired.status).toBe(400);
    expect(expired.body.error.code).toBe('invalid_grant');
  });

  it('names the missing parameters of an authorization_code request', async () => {
    const res = await exchange({ grant_type: 'authorization_code', client_id: 'dashboard' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['code', 'code_verifier', 'redirect_uri']);
  });
});

describe('refresh tokens', () => {
  /** The verifier the APIs use, for this provider's tokens. */
  const verifierFor = (provider: Idp) =>
    createTokenVerifier({
      AUTH_ISSUER: provider.issuer,
      AUTH_AUDIENCE: ['release-coordinator'],
      AUTH_JWKS_URI: provider.jwksUri,
      AUTH_ROLES_CLAIMS: ['roles', 'cognito:groups', 'scope'],
      AUTH_GROUPS_CLAIMS: ['groups'],
      AUTH_ADMIN_ROLE: 'admin',
      AUTH_SERVICE_ROLE: 'service',
      AUTH_GRACE_SECONDS: 0,
    });
  async function signedIn(typed = { sub: 'olga', roles: 'admin', groups: 'SD_AAAAAAAA' }) {
    const verifier = verifierOf();
    const code = await codeFor(verifier, typed);
    const tokens = await exchange({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: 'dashboard',
      code_verifier: verifier,
    });
    expect(tokens.status).toBe(200);
    return tokens.body;
  }

  it('the code exchange answers a refresh token that buys new access tokens for the same person', async () => {
    const first = await signedIn();
    expect(typeof first.refresh_token).toBe('string');
    clock.advance(30 * 60_000);
    const again = await exchange({
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      client_id: 'dashboard',
    });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    expect(again.body.access_token).not.toBe(first.access_token);
    const principal = await verifierFor(idp).verify(again.body.access_token);
    expect(principal).toMatchObject({ sub: 'olga', isAdmin: true, groups: ['SD_AAAAAAAA'] });
  });

  it('is refused by the APIs as an access token, for another client, and once it has expired', async () => {
    const { refresh_token: refresh } = await signedIn();
    await expect(verifierFor(idp).verify(refresh)).rejects.toThrow();
    const other = await exchange({ grant_type: 'refresh_token', refresh_token: refresh, client_id: 'drc' });
    expect(other.status).toBe(400);
    expect(other.body.error.code).toBe('invalid_grant');
    clock.advance(REFRESH_TTL_SECONDS * 1000 + 1000);
    const late = await exchange({
      grant_type: 'refresh_token',
      refresh_token: refresh,
      client_id: 'dashboard',
    });
    expect(late.body.error.code).toBe('invalid_grant');
    const missing = await exchange({ grant_type: 'refresh_token', client_id: 'dashboard' });
    expect(missing.body.error).toMatchObject({
      code: 'invalid_request',
      fields: { refresh_token: ['Required'] },
    });
  });
});

describe('CORS for the dashboard', () => {
  it('lets the dashboard origin read discovery and the token endpoint, and no other origin', async () => {
    const allowed = await fetch(`${idp.url}/.well-known/openid-configuration`, {
      headers: { Origin: DASHBOARD },
    });
    expect(allowed.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    const preflight = await fetch(`${idp.url}/oauth/token`, {
      method: 'OPTIONS',
      headers: { Origin: DASHBOARD, 'Access-Control-Request-Method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    const token = await fetch(`${idp.url}/oauth/token`, {
      method: 'POST',
      headers: { ...FORM, Origin: DASHBOARD },
      body: 'grant_type=authorization_code',
    });
    expect(token.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    const other = await fetch(`${idp.url}/.well-known/jwks.json`, {
      headers: { Origin: 'https://evil.example' },
    });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('without development sign-in', () => {
  it('IDP_DEV_TOKENS=false removes /authorize and the authorization_code grant', async () => {
    const off = await startIdp({
      port: 0,
      host: '127.0.0.1',
      dataDir: join(dataDir, 'off'),
      audience: 'release-coordinator',
      clients: DEFAULT_CLIENTS,
      devTokens: false,
    });
    try {
      expect((await fetch(`${off.url}/authorize?${query(authorizeRequest(verifierOf()))}`)).status).toBe(404);
      const disc = (await (await fetch(`${off.url}/.well-known/openid-configuration`)).json()) as Record<
        string,
        unknown
      >;
      expect(disc.authorization_endpoint).toBeUndefined();
      const res = await fetch(`${off.url}/oauth/token`, {
        method: 'POST',
        headers: FORM,
        body: 'grant_type=authorization_code&code=x',
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unsupported_grant_type');
    } finally {
      await off.stop();
    }
  });
});
