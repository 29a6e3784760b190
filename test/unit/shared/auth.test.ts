import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenVerifier, type TokenVerifier } from '#functions/shared/auth.js';
import { generateSigningKey, jwks, signJwt } from '#local/jwt.js';

// A real JWKS over loopback HTTP: the verifier fetches keys exactly as it does from Cognito or the local IdP.
const key = generateSigningKey();
const otherKey = generateSigningKey();
let server: Server;
let issuer: string;
let verifier: TokenVerifier;

beforeAll(async () => {
  server = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(jwks(key)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  verifier = createTokenVerifier({
    AUTH_ISSUER: issuer,
    AUTH_AUDIENCE: ['coordinator'],
    AUTH_ROLES_CLAIMS: ['roles', 'cognito:groups', 'scope'],
    AUTH_GROUPS_CLAIMS: ['groups'],
    AUTH_ADMIN_ROLE: 'admin',
    AUTH_SERVICE_ROLE: 'service',
    AUTH_GRACE_SECONDS: 0,
  });
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const claims = (extra: Record<string, unknown> = {}) => ({
  iss: issuer,
  aud: 'coordinator',
  sub: 'alice',
  ...extra,
});

describe('token verification', () => {
  it('accepts a valid token and reads roles and groups from the claims', async () => {
    const p = await verifier.verify(signJwt(key, claims({ roles: ['ADMIN'], groups: ['SD_00000001'] })));
    expect(p).toMatchObject({
      kind: 'user',
      sub: 'alice',
      isAdmin: true,
      isService: false,
      groups: ['SD_00000001'],
    });
  });

  it('maps OAuth scopes and Cognito groups to roles', async () => {
    const scoped = await verifier.verify(
      signJwt(key, { iss: issuer, client_id: 'coordinator', sub: 'c', scope: 'rc/service' }),
    );
    expect(scoped.isService).toBe(true);
    const grouped = await verifier.verify(signJwt(key, claims({ 'cognito:groups': ['admin'] })));
    expect(grouped.isAdmin).toBe(true);
  });

  it.each([
    ['expired', () => signJwt(key, claims({ exp: Math.floor(Date.now() / 1000) - 2 }))],
    ['wrong issuer', () => signJwt(key, claims({ iss: 'http://evil.example' }))],
    ['wrong audience', () => signJwt(key, claims({ aud: 'someone-else' }))],
    ['signed by another key', () => signJwt({ ...otherKey, kid: key.kid }, claims())],
    ['not a JWT', () => 'abc.def.ghi'],
  ])('refuses a token that is %s with 401', async (_, make) => {
    await expect(verifier.verify(make())).rejects.toMatchObject({ status: 401 });
  });
});

describe('verified-token cache', () => {
  it('serves a repeat of a verified token from memory but still refuses it once it expires', async () => {
    let nowMs = Date.now();
    const cached = createTokenVerifier(
      {
        AUTH_ISSUER: issuer,
        AUTH_AUDIENCE: ['coordinator'],
        AUTH_ROLES_CLAIMS: ['roles'],
        AUTH_GROUPS_CLAIMS: ['groups'],
        AUTH_ADMIN_ROLE: 'admin',
        AUTH_SERVICE_ROLE: 'service',
        AUTH_GRACE_SECONDS: 0,
      },
      () => nowMs,
    );
    const token = signJwt(key, claims({ roles: ['admin'] }), 60);
    expect((await cached.verify(token)).isAdmin).toBe(true);
    nowMs += 30_000;
    expect((await cached.verify(token)).isAdmin).toBe(true);
    nowMs += 31_000;
    await expect(cached.verify(token)).rejects.toMatchObject({ status: 401 });
  });
});
