import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenVerifier } from '#functions/shared/auth.js';
import { FakeClock } from '#functions/shared/clock.js';
import { DEFAULT_CLIENTS } from '#local/idp/clients.js';
import { type Idp, startIdp } from '#local/idp/server.js';
import { generateSigningKey, signJwt } from '#local/jwt.js';

// The identity provider over real loopback HTTP, with tokens checked by the same verifier the functions use.
const dataDir = mkdtempSync(join(tmpdir(), 'idp-'));
// Starts at the real time so aws-jwt-verify (which reads the system clock) agrees; moved only to test expiry.
const clock = new FakeClock(Date.now());
let idp: Idp;

const start = (extra: Partial<Parameters<typeof startIdp>[0]> = {}) =>
  startIdp({
    port: 0,
    host: '127.0.0.1',
    dataDir,
    audience: 'release-coordinator',
    clients: DEFAULT_CLIENTS,
    clock,
    ...extra,
  });

beforeAll(async () => {
  idp = await start();
});
afterAll(async () => {
  await idp.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const JSON_TYPE = { 'Content-Type': 'application/json' };
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

async function call(path: string, init: RequestInit = {}) {
  const res = await fetch(`${idp.url}${path}`, init);
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** The verify endpoint for tokens of the APIs' audience (it checks the task services' unless told another). */
const verify = (token: string, audience: string | null = 'release-coordinator') =>
  call(`/oauth/token/verify${audience ? `?audience=${audience}` : ''}`, {
    headers: { Authorization: `Bearer ${token}` },
  });

function functionsVerifier() {
  return createTokenVerifier({
    AUTH_ISSUER: idp.issuer,
    AUTH_AUDIENCE: ['release-coordinator'],
    AUTH_ROLES_CLAIMS: ['roles', 'cognito:groups', 'scope'],
    AUTH_GROUPS_CLAIMS: ['groups'],
    AUTH_ADMIN_ROLE: 'admin',
    AUTH_SERVICE_ROLE: 'service',
    AUTH_GRACE_SECONDS: 0,
  });
}

describe('discovery', () => {
  it('serves an OpenID configuration whose issuer is http://127.0.0.1:<port>', async () => {
    const { status, body, headers } = await call('/.well-known/openid-configuration');
    expect(status).toBe(200);
    expect(headers.get('content-type')).toBe('application/json');
    expect(idp.issuer).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(body).toMatchObject({
      issuer: idp.issuer,
      jwks_uri: `${idp.issuer}/.well-known/jwks.json`,
      token_endpoint: `${idp.issuer}/oauth/token`,
      token_verify_endpoint: `${idp.issuer}/oauth/token/verify`,
      grant_types_supported: ['client_credentials', 'authorization_code', 'refresh_token'],
      id_token_signing_alg_values_supported: ['RS256'],
    });
  });

  it('serves the RS256 public key as a JWKS', async () => {
    const { status, body } = await call('/.well-known/jwks.json');
    expect(status).toBe(200);
    expect(body.keys).toHaveLength(1);
    expect(body.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: expect.any(String) });
    expect(body.keys[0].d).toBeUndefined();
  });
});

describe('client credentials', () => {
  it('issues a service token to a task-service client (form body) that the functions accept', async () => {
    const { status, body, headers } = await call('/oauth/token', {
      method: 'POST',
      headers: FORM,
      body: form({
        grant_type: 'client_credentials',
        client_id: 'task-service',
        client_secret: 'task-service-local-secret',
      }),
    });
    expect(status).toBe(200);
    expect(headers.get('cache-control')).toBe('no-store');
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, access_token: expect.any(String) });
    const principal = await functionsVerifier().verify(body.access_token);
    expect(principal).toMatchObject({
      sub: 'task-service',
      clientId: 'task-service',
      isService: true,
      isAdmin: false,
    });
  });

  it('accepts the client secret by HTTP Basic and a JSON body', async () => {
    const viaBasic = await call('/oauth/token', {
      method: 'POST',
      headers: { ...FORM, Authorization: basic('admin', 'admin-local-secret') },
      body: form({ grant_type: 'client_credentials' }),
    });
    expect(viaBasic.status).toBe(200);
    expect((await functionsVerifier().verify(viaBasic.body.access_token)).isAdmin).toBe(true);
    const viaJson = await call('/oauth/token', {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify({
        grant_type: 'client_credentials',
        client_id: 'task-service',
        client_secret: 'task-service-local-secret',
        scope: 'ignored',
      }),
    });
    expect(viaJson.status).toBe(200);
    expect((await verify(viaJson.body.access_token)).body).toMatchObject({
      sub: 'task-service',
      roles: ['service'],
    });
  });

  it('refuses a wrong secret or an unknown client with 401 invalid_client', async () => {
    for (const [id, secret] of [
      ['coordinator', 'wrong'],
      ['nobody', 'coordinator-local-secret'],
    ]) {
      const { status, body, headers } = await call('/oauth/token', {
        method: 'POST',
        headers: FORM,
        body: form({ grant_type: 'client_credentials', client_id: id, client_secret: secret }),
      });
      expect(status).toBe(401);
      expect(headers.get('www-authenticate')).toMatch(/^Basic/);
      expect(body.error.code).toBe('invalid_client');
    }
  });

  it('answers a JSON 400 for another grant type, missing credentials or two auth methods at once', async () => {
    const grant = await call('/oauth/token', {
      method: 'POST',
      headers: FORM,
      body: form({ grant_type: 'password' }),
    });
    expect(grant.status).toBe(400);
    expect(grant.body.error).toMatchObject({
      code: 'unsupported_grant_type',
      fields: { grant_type: expect.any(Array) },
    });

    const missing = await call('/oauth/token', {
      method: 'POST',
      headers: FORM,
      body: form({ grant_type: 'client_credentials' }),
    });
    expect(missing.status).toBe(400);
    expect(Object.keys(missing.body.error.fields)).toEqual(['client_id', 'client_secret']);

    const noGrant = await call('/oauth/token', { method: 'POST', headers: JSON_TYPE, body: '{}' });
    expect(noGrant.status).toBe(400);
    expect(noGrant.body.error).toMatchObject({
      code: 'validation_error',
      fields: { grant_type: expect.any(Array) },
    });

    const both = await call('/oauth/token', {
      method: 'POST',
      headers: { ...FORM, Authorization: basic('admin', 'admin-local-secret') },
      body: form({ grant_type: 'client_credentials', client_secret: 'admin-local-secret' }),
    });
    expect(both.status).toBe(400);
    expect(both.body.error.code).toBe('invalid_request');

    const notJson = await call('/oauth/token', { method: 'POST', headers: JSON_TYPE, body: '{nope' });
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe('bad_request');
  });
});

describe('dev tokens', () => {
  it('mints a token with the asked sub, roles, groups and lifetime, and standard claims', async () => {
    const { status, body } = await call('/dev/tokens', {
      method: 'POST',
      body: JSON.stringify({ sub: 'alice', roles: ['admin'], groups: ['SD_ME0WME0W'], expires_in: 600 }),
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 600 });
    const claims = (await verify(body.access_token)).body;
    const now = Math.floor(clock.nowMs() / 1000);
    expect(claims).toMatchObject({
      iss: idp.issuer,
      aud: 'release-coordinator',
      sub: 'alice',
      roles: ['admin'],
      groups: ['SD_ME0WME0W'],
      iat: now,
      exp: now + 600,
    });
    const principal = await functionsVerifier().verify(body.access_token);
    expect(principal).toMatchObject({ isAdmin: true, groups: ['SD_ME0WME0W'] });
  });

  it('defaults to no roles, no groups and one hour', async () => {
    const { body } = await call('/dev/tokens', { method: 'POST', body: JSON.stringify({ sub: 'bob' }) });
    expect(body.expires_in).toBe(3600);
    expect((await verify(body.access_token)).body).toMatchObject({ sub: 'bob', roles: [], groups: [] });
  });

  it('answers a JSON 400 naming each bad field, unknown fields included', async () => {
    const { status, body } = await call('/dev/tokens', {
      method: 'POST',
      body: JSON.stringify({ roles: 'admin', expires_in: -1, colour: 'red' }),
    });
    expect(status).toBe(400);
    expect(body.error.code).toBe('validation_error');
    expect(Object.keys(body.error.fields).sort()).toEqual(['body', 'expires_in', 'roles', 'sub']);
    expect(body.error.fields.body[0]).toContain('colour');
  });
});

describe('verify endpoint', () => {
  it('answers 401 with WWW-Authenticate: Bearer without a token', async () => {
    const { status, headers, body } = await call('/oauth/token/verify');
    expect(status).toBe(401);
    expect(headers.get('www-authenticate')).toBe('Bearer');
    expect(body.error.code).toBe('unauthorized');
  });

  it('answers 401 for a token signed by another key, a tampered token and another issuer', async () => {
    const other = signJwt(generateSigningKey(), { iss: idp.issuer, aud: 'release-coordinator', sub: 'x' });
    expect((await verify(other)).status).toBe(401);
    const good = (await call('/dev/tokens', { method: 'POST', body: JSON.stringify({ sub: 'carol' }) })).body
      .access_token as string;
    const [h, p, s] = good.split('.');
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...payload, roles: ['admin'] })).toString('base64url')}.${s}`;
    expect((await verify(tampered)).status).toBe(401);
    expect((await verify('not-a-jwt')).status).toBe(401);
  });

  it('checks the audience: the task services’ unless ?audience= names another of its own (400 for a stranger)', async () => {
    const coordinator = (
      await call('/oauth/token', {
        method: 'POST',
        headers: FORM,
        body: form({
          grant_type: 'client_credentials',
          client_id: 'coordinator',
          client_secret: 'coordinator-local-secret',
        }),
      })
    ).body.access_token as string;
    const forTheApis = (
      await call('/dev/tokens', { method: 'POST', body: JSON.stringify({ sub: 'svc', roles: ['service'] }) })
    ).body.access_token as string;
    // What a task service asks (the spec's plain form): only the coordinator's token passes.
    expect((await verify(coordinator, null)).body).toMatchObject({
      aud: 'task-services',
      client_id: 'coordinator',
    });
    const replayed = await verify(forTheApis, null);
    expect(replayed.status).toBe(401);
    expect(replayed.body.error.message).toContain('task-services');
    // Named audiences.
    expect((await verify(coordinator, 'task-services')).status).toBe(200);
    expect((await verify(forTheApis, 'release-coordinator')).status).toBe(200);
    expect((await verify(coordinator, 'release-coordinator')).status).toBe(401);
    const stranger = await verify(coordinator, 'someone-else');
    expect(stranger.status).toBe(400);
    expect(stranger.body.error.fields.audience[0]).toContain('task-services');
  });

  it('answers 401 once the token has expired, by the clock the IdP is given', async () => {
    const { body } = await call('/dev/tokens', {
      method: 'POST',
      body: JSON.stringify({ sub: 'dave', expires_in: 60 }),
    });
    expect((await verify(body.access_token)).status).toBe(200);
    clock.advance(59_000);
    expect((await verify(body.access_token)).status).toBe(200);
    clock.advance(1_000);
    expect((await verify(body.access_token)).status).toBe(401);
    clock.set(Date.now());
  });
});

describe('routing', () => {
  it('answers 404 for an unknown path and 405 with Allow for a wrong method, as JSON', async () => {
    const unknown = await call('/nope');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    const wrong = await call('/oauth/token');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect(wrong.body.error.code).toBe('method_not_allowed');
  });
});

describe('restarts and settings', () => {
  it('keeps its signing key in the data dir, so tokens minted before a restart still verify', async () => {
    const { body } = await call('/dev/tokens', { method: 'POST', body: JSON.stringify({ sub: 'erin' }) });
    const kid = (await call('/.well-known/jwks.json')).body.keys[0].kid;
    const issuer = idp.issuer;
    await idp.stop();
    // A new port (the same issuer), so no pooled keep-alive socket to the stopped server gets reused.
    idp = await start({ issuer });
    expect(idp.issuer).toBe(issuer);
    expect((await call('/.well-known/jwks.json')).body.keys[0].kid).toBe(kid);
    expect((await verify(body.access_token)).body.sub).toBe('erin');
  });

  it('writes IDP_ISSUER into tokens and discovery when given, and can turn dev tokens off', async () => {
    const other = await start({
      issuer: 'https://idp.example.test/',
      devTokens: false,
      dataDir: `${dataDir}/b`,
    });
    try {
      const disc = (await (await fetch(`${other.url}/.well-known/openid-configuration`)).json()) as {
        issuer: string;
      };
      expect(disc.issuer).toBe('https://idp.example.test');
      expect((await fetch(`${other.url}/dev/tokens`, { method: 'POST', body: '{"sub":"x"}' })).status).toBe(
        404,
      );
      const token = (await (
        await fetch(`${other.url}/oauth/token`, {
          method: 'POST',
          headers: { Authorization: basic('coordinator', 'coordinator-local-secret'), ...FORM },
          body: form({ grant_type: 'client_credentials' }),
        })
      ).json()) as { access_token: string };
      const claims = (await (
        await fetch(`${other.url}/oauth/token/verify`, {
          headers: { Authorization: `Bearer ${token.access_token}` },
        })
      ).json()) as { iss: string };
      expect(claims.iss).toBe('https://idp.example.test');
    } finally {
      await other.stop();
    }
  });
});
