import {
  createPrivateKey,
  createPublicKey,
  createSign,
  createVerify,
  generateKeyPairSync,
  type KeyObject,
  randomUUID,
} from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * RS256 signing for the local identity provider and for tests: real JWTs, verified by the same aws-jwt-verify code
 * as on AWS. Nothing here is used by the Lambda handlers.
 */
export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
}

export function generateSigningKey(): SigningKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid: randomUUID(), privateKey };
}

/**
 * The key kept in `file` (PEM + kid, JSON), created on first use. Keeping it means tokens minted before a restart
 * of the local stack still verify after it.
 */
export function loadOrCreateSigningKey(file: string): SigningKey {
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { kid?: unknown; privateKeyPem?: unknown };
    if (typeof saved.kid !== 'string' || typeof saved.privateKeyPem !== 'string')
      throw new Error(`${file} is not a signing key written by the local identity provider`);
    return { kid: saved.kid, privateKey: createPrivateKey(saved.privateKeyPem) };
  }
  const key = generateSigningKey();
  mkdirSync(dirname(file), { recursive: true });
  const pem = key.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  // Written aside and renamed, so a crash mid-write never leaves a half key that would break every later start.
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify({ kid: key.kid, privateKeyPem: pem }), { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
  return key;
}

export function jwks(key: SigningKey) {
  const jwk = createPublicKey(key.privateKey).export({ format: 'jwk' });
  return { keys: [{ ...jwk, kid: key.kid, alg: 'RS256', use: 'sig' }] };
}

const b64url = (v: Buffer | string) => Buffer.from(v).toString('base64url');

/**
 * Signs a JWT. `iat`/`exp` are filled from `expiresIn` (seconds) unless the claims carry them; `nowSeconds` lets a
 * caller with an injected clock decide what "now" is.
 */
export function signJwt(
  key: SigningKey,
  claims: Record<string, unknown>,
  expiresIn = 3600,
  nowSeconds = Math.floor(Date.now() / 1000),
): string {
  const payload = { iat: nowSeconds, exp: nowSeconds + expiresIn, jti: randomUUID(), ...claims };
  const header = { alg: 'RS256', typ: 'JWT', kid: key.kid };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  const signature = createSign('RSA-SHA256').update(input).sign(key.privateKey);
  return `${input}.${b64url(signature)}`;
}

export class JwtError extends Error {}

export interface VerifyJwtOptions {
  issuer: string;
  /** Accepted audiences; empty accepts any. */
  audience: string[];
  nowSeconds: number;
}

/**
 * Verifies a token this key signed: RS256 only, matching kid, signature, issuer, audience, and expiry with no grace.
 * The identity provider uses it for its verify endpoint, where the clock must be injectable; functions verify with
 * aws-jwt-verify (functions/shared/auth.ts).
 */
export function verifyJwt(key: SigningKey, token: string, opts: VerifyJwtOptions): Record<string, unknown> {
  const parts = token.split('.');
  if (parts.length !== 3) throw new JwtError('not a JWT');
  let header: Record<string, unknown>;
  let payload: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
    payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
  } catch {
    throw new JwtError('not a JWT');
  }
  if (typeof header !== 'object' || header === null || typeof payload !== 'object' || payload === null)
    throw new JwtError('not a JWT');
  if (header.alg !== 'RS256') throw new JwtError('unsupported algorithm');
  if (header.kid !== key.kid) throw new JwtError('unknown key');
  const valid = createVerify('RSA-SHA256')
    .update(`${parts[0]}.${parts[1]}`)
    .verify(createPublicKey(key.privateKey), Buffer.from(parts[2], 'base64url'));
  if (!valid) throw new JwtError('bad signature');
  if (payload.iss !== opts.issuer) throw new JwtError('wrong issuer');
  if (opts.audience.length) {
    const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    if (!aud.some((a) => typeof a === 'string' && opts.audience.includes(a)))
      throw new JwtError('wrong audience');
  }
  if (typeof payload.exp !== 'number') throw new JwtError('no expiry');
  if (payload.exp <= opts.nowSeconds) throw new JwtError('expired');
  return payload;
}
