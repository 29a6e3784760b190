import { createHash, randomBytes } from 'node:crypto';

/**
 * Secrets handed to clients. Both kinds carry 256 random bits (base64url) behind a prefix that says what they are,
 * so a `?token=` value goes straight to the right check, and secret scanners can recognise a leaked one. Only the
 * SHA-256 of a secret is ever stored.
 */
export const DEV_TOKEN_PREFIX = 'sfdt_';
export const SIGNED_TOKEN_PREFIX = 'sfsu_';

const BODY = '[A-Za-z0-9_-]{43}';
const DEV_PATTERN = new RegExp(`^${DEV_TOKEN_PREFIX}${BODY}$`);
const SIGNED_PATTERN = new RegExp(`^${SIGNED_TOKEN_PREFIX}${BODY}$`);

export function newDevToken(): string {
  return DEV_TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

export function newSignedToken(): string {
  return SIGNED_TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

export type TokenKind = 'developer' | 'signed' | 'unknown';

export function tokenKind(token: string): TokenKind {
  if (SIGNED_PATTERN.test(token)) return 'signed';
  if (DEV_PATTERN.test(token)) return 'developer';
  return 'unknown';
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** What listings show instead of a developer token: the prefix and four characters, enough to tell them apart. */
export function maskedToken(hint: string): string {
  return `${hint}${'*'.repeat(12)}`;
}

export function hintOf(token: string): string {
  return token.slice(0, DEV_TOKEN_PREFIX.length + 4);
}
