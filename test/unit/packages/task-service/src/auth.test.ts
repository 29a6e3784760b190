import { describe, expect, it } from 'vitest';
import { generateSigningKey, jwks, signJwt } from '#local/jwt.js';
import { checkClaims, tokenChecker } from '#packages/task-service/src/auth.js';
import { KitError } from '#packages/task-service/src/errors.js';

/** The coordinator's token, and only it: the audience locally, the scope and client on Cognito. */
const key = generateSigningKey();
const issuer = 'https://idp.test';
const jwksFetch = (async (url: string) => {
  expect(url).toBe(`${issuer}/.well-known/jwks.json`);
  return new Response(JSON.stringify(jwks(key)));
}) as typeof fetch;
const check = tokenChecker({ mode: 'jwks', issuer, clientIds: ['coordinator-client'] }, jwksFetch);
const token = (claims: Record<string, unknown>, expiresIn = 300) =>
  signJwt(key, { iss: issuer, sub: 'coordinator', ...claims }, expiresIn);
const status = async (header: string | undefined) =>
  check(header).then(
    () => 200,
    (err) => (err as KitError).status,
  );

describe('tokenChecker (jwks)', () => {
  it('accepts the coordinator’s token: aud task-services', async () => {
    expect(await status(`Bearer ${token({ aud: 'task-services', roles: ['service'] })}`)).toBe(200);
  });

  it('accepts a Cognito access token without aud: the scope and the coordinator’s client id', async () => {
    expect(
      await status(`Bearer ${token({ scope: 'task-services/invoke', client_id: 'coordinator-client' })}`),
    ).toBe(200);
  });

  it('refuses no token, a malformed one, an expired one, one of another issuer or signed by another key', async () => {
    expect(await status(undefined)).toBe(401);
    expect(await status('Bearer not.a.jwt')).toBe(401);
    expect(await status(`Bearer ${token({ aud: 'task-services' }, -60)}`)).toBe(401);
    expect(await status(`Bearer ${token({ aud: 'task-services', iss: 'https://other.test' })}`)).toBe(401);
    const forged = signJwt(generateSigningKey(), { iss: issuer, aud: 'task-services' });
    expect(await status(`Bearer ${forged}`)).toBe(401);
  });

  it('refuses an admin’s token and another audience’s, whatever roles they carry', async () => {
    expect(await status(`Bearer ${token({ aud: 'release-coordinator', roles: ['admin'] })}`)).toBe(401);
    expect(await status(`Bearer ${token({ aud: ['release-coordinator', 'x'], roles: ['service'] })}`)).toBe(
      401,
    );
  });

  it('refuses a token without aud that lacks the scope, or is of another client', async () => {
    expect(
      await status(`Bearer ${token({ scope: 'coordinator/service', client_id: 'coordinator-client' })}`),
    ).toBe(401);
    expect(await status(`Bearer ${token({ scope: 'task-services/invoke', client_id: 'stager' })}`)).toBe(401);
  });
});

describe('checkClaims', () => {
  it('answers 403 when a required role is missing, from roles, cognito:groups or scope', () => {
    const rules = { audience: ['task-services'], requiredRole: 'service' };
    expect(() => checkClaims({ aud: 'task-services', roles: ['user'] }, rules)).toThrow(
      expect.objectContaining({ status: 403 }),
    );
    expect(() => checkClaims({ aud: 'task-services', 'cognito:groups': ['service'] }, rules)).not.toThrow();
    expect(() => checkClaims({ aud: 'task-services', scope: 'coordinator/service' }, rules)).not.toThrow();
  });

  it('refuses a token without aud when no client id is configured', () => {
    expect(() => checkClaims({ scope: 'task-services/invoke', client_id: 'c' }, {})).toThrow(KitError);
  });
});

describe('tokenChecker (verify)', () => {
  it('asks the verify endpoint, then checks the claims it answers: a valid admin token is still refused', async () => {
    const claims: Record<string, unknown>[] = [{ aud: 'task-services' }, { aud: 'release-coordinator' }];
    const asked: string[] = [];
    const verify = tokenChecker({ mode: 'verify', authUrl: 'https://idp.test/' }, (async (url: string) => {
      asked.push(url);
      return new Response(JSON.stringify(claims.shift()));
    }) as typeof fetch);
    await expect(verify('Bearer a')).resolves.toEqual({ aud: 'task-services' });
    await expect(verify('Bearer b')).rejects.toMatchObject({ status: 401 });
    expect(asked).toEqual([
      'https://idp.test/oauth/token/verify?audience=task-services',
      'https://idp.test/oauth/token/verify?audience=task-services',
    ]);
  });

  it('refuses a token the endpoint does not verify, or when it cannot be reached', async () => {
    const refusing = tokenChecker(
      { mode: 'verify', authUrl: 'https://idp.test' },
      (async () => new Response('{}', { status: 401 })) as typeof fetch,
    );
    await expect(refusing('Bearer a')).rejects.toMatchObject({ status: 401 });
    const down = tokenChecker({ mode: 'verify', authUrl: 'https://idp.test' }, (async () => {
      throw new TypeError('fetch failed');
    }) as typeof fetch);
    await expect(down('Bearer a')).rejects.toMatchObject({ status: 401 });
  });
});

describe('tokenChecker (none)', () => {
  it('checks nothing', async () => {
    await expect(tokenChecker({ mode: 'none' })(undefined)).resolves.toBeUndefined();
  });
});
