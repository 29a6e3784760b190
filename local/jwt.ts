import { createPublicKey, createSign, generateKeyPairSync, type KeyObject, randomUUID } from 'node:crypto';

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

export function jwks(key: SigningKey) {
  const jwk = createPublicKey(key.privateKey).export({ format: 'jwk' });
  return { keys: [{ ...jwk, kid: key.kid, alg: 'RS256', use: 'sig' }] };
}

const b64url = (v: Buffer | string) => Buffer.from(v).toString('base64url');

/** Signs a JWT. `iat`/`exp` are filled from `expiresIn` (seconds) unless the claims carry them. */
export function signJwt(key: SigningKey, claims: Record<string, unknown>, expiresIn = 3600): string {
  const now = Math.floor(Date.now() / 1000);
  const payload = { iat: now, exp: now + expiresIn, jti: randomUUID(), ...claims };
  const header = { alg: 'RS256', typ: 'JWT', kid: key.kid };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  const signature = createSign('RSA-SHA256').update(input).sign(key.privateKey);
  return `${input}.${b64url(signature)}`;
}
