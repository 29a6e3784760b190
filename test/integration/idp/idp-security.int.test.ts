import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTokenVerifier } from '#functions/shared/auth.js';
import { DEFAULT_CLIENTS } from '#local/idp/clients.js';
import { type Idp, startIdp } from '#local/idp/server.js';

/** The identity provider's part in the security model: client identities, token audiences, dev-token exposure. */
const dataDir = mkdtempSync(join(tmpdir(), 'idp-sec-'));
const started: Idp[] = [];
afterAll(async () => {
  await Promise.all(started.map((i) => i.stop()));
  rmSync(dataDir, { recursive: true, force: true });
});

async function start(extra: Partial<Parameters<typeof startIdp>[0]> = {}) {
  const idp = await startIdp({
    port: 0,
    host: '127.0.0.1',
    dataDir,
    audience: 'release-coordinator',
    clients: DEFAULT_CLIENTS,
    ...extra,
  });
  started.push(idp);
  return idp;
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
const claimsOf = (token: string) =>
  JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));

function apiVerifier(idp: Idp) {
  return createTokenVerifier({
    AUTH_ISSUER: idp.issuer,
    AUTH_AUDIENCE: ['release-coordinator'],
    AUTH_ROLES_CLAIMS: ['roles'],
    AUTH_GROUPS_CLAIMS: ['groups'],
    AUTH_ADMIN_ROLE: 'admin',
    AUTH_SERVICE_ROLE: 'service',
    AUTH_GRACE_SECONDS: 0,
  });
}

describe('local identity provider security', () => {
  it('puts the client_id given to POST /dev/tokens into the token as the client_id claim', async () => {
    const idp = await start();
    const res = await post(`${idp.url}/dev/tokens`, {
      sub: 'svc',
      roles: ['service'],
      client_id: 'client-a',
    });
    expect(res.status).toBe(200);
    const { access_token } = (await res.json()) as { access_token: string };
    expect(claimsOf(access_token).client_id).toBe('client-a');
    const verified = await apiVerifier(idp).verify(access_token);
    expect(verified.clientId).toBe('client-a');
  });

  it('issues the coordinator client a token that task services can verify but the coordinator API refuses', async () => {
    const idp = await start();
    const res = await fetch(`${idp.url}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&client_id=coordinator&client_secret=coordinator-local-secret',
    });
    const { access_token } = (await res.json()) as { access_token: string };
    expect(claimsOf(access_token).client_id).toBe('coordinator');
    const verify = await fetch(`${idp.url}/oauth/token/verify`, {
      headers: { Authorization: `Bearer ${access_token}` },
    });
    expect(verify.status).toBe(200);
    await expect(apiVerifier(idp).verify(access_token)).rejects.toMatchObject({ status: 401 });
  });

  it('serves POST /dev/tokens on a non-loopback address only when IDP_DEV_TOKENS is explicitly true', async () => {
    const exposed = await start({ host: '0.0.0.0', dataDir: `${dataDir}/exposed` });
    expect((await post(`${exposed.url}/dev/tokens`, { sub: 'x' })).status).toBe(404);
    const allowed = await start({ host: '0.0.0.0', devTokens: true, dataDir: `${dataDir}/allowed` });
    expect((await post(`${allowed.url}/dev/tokens`, { sub: 'x' })).status).toBe(200);
    const loopback = await start({ dataDir: `${dataDir}/loopback` });
    expect((await post(`${loopback.url}/dev/tokens`, { sub: 'x' })).status).toBe(200);
  });
});
