import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateSigningKey, loadOrCreateSigningKey, signJwt, verifyJwt } from '#local/jwt.js';

const dir = mkdtempSync(join(tmpdir(), 'jwt-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const key = generateSigningKey();
const NOW = 1_800_000_000;
const opts = { issuer: 'http://idp', audience: ['rc'], nowSeconds: NOW };
const token = (claims: Record<string, unknown> = {}, expiresIn = 60) =>
  signJwt(key, { iss: 'http://idp', aud: 'rc', sub: 'alice', ...claims }, expiresIn, NOW);

describe('verifyJwt', () => {
  it('returns the claims of a token this key signed, with iat and exp from the given clock', () => {
    expect(verifyJwt(key, token(), opts)).toMatchObject({ sub: 'alice', iat: NOW, exp: NOW + 60 });
  });

  it.each([
    ['expired at exactly exp', () => token(), { nowSeconds: NOW + 60 }, 'expired'],
    ['from another issuer', () => token({ iss: 'http://evil' }), {}, 'wrong issuer'],
    ['for another audience', () => token({ aud: 'other' }), {}, 'wrong audience'],
    [
      'signed by another key with the same kid',
      () => signJwt({ ...generateSigningKey(), kid: key.kid }, {}),
      {},
      'bad signature',
    ],
    ['without exp', () => token({ exp: undefined }), {}, 'no expiry'],
    ['not a JWT', () => 'a.b', {}, 'not a JWT'],
  ])('refuses a token %s', (_, make, override, reason) => {
    expect(() => verifyJwt(key, make(), { ...opts, ...override })).toThrow(reason);
  });

  it('accepts any audience when none is configured, and audience arrays', () => {
    expect(verifyJwt(key, token({ aud: 'other' }), { ...opts, audience: [] }).sub).toBe('alice');
    expect(verifyJwt(key, token({ aud: ['x', 'rc'] }), opts).sub).toBe('alice');
  });

  it('refuses alg none even with a valid-looking payload', () => {
    const [, payload] = token().split('.');
    const header = Buffer.from(JSON.stringify({ alg: 'none', kid: key.kid })).toString('base64url');
    expect(() => verifyJwt(key, `${header}.${payload}.`, opts)).toThrow('unsupported algorithm');
  });
});

describe('loadOrCreateSigningKey', () => {
  it('creates the key once, readable only by its owner, and loads the same key afterwards', () => {
    const file = join(dir, 'idp', 'signing-key.json');
    const first = loadOrCreateSigningKey(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const again = loadOrCreateSigningKey(file);
    expect(again.kid).toBe(first.kid);
    const signed = signJwt(first, { iss: 'http://idp', aud: 'rc' }, 60, NOW);
    expect(verifyJwt(again, signed, opts).iss).toBe('http://idp');
    expect(JSON.parse(readFileSync(file, 'utf8')).privateKeyPem).toMatch(/BEGIN PRIVATE KEY/);
  });

  it('refuses a file that is not a key it wrote', () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, '{"hello":1}');
    expect(() => loadOrCreateSigningKey(file)).toThrow('is not a signing key');
  });
});
