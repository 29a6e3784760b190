import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { AppError } from '#functions/shared/errors.js';
import { signJwt } from '../jwt.js';
import { type IdpContext, tokenResponse } from './context.js';
import type { Reply } from './http.js';
import { issueRefreshToken } from './refresh-token.js';

// RFC 6749 §3.2: the token endpoint must ignore parameters it does not know, so this body is not strict.
export const tokenBody = z.object({
  grant_type: z.string().min(1),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
  scope: z.string().optional(),
  // authorization_code
  code: z.string().optional(),
  redirect_uri: z.string().optional(),
  code_verifier: z.string().optional(),
  // refresh_token
  refresh_token: z.string().optional(),
});
export type TokenBody = z.infer<typeof tokenBody>;

/** RFC 7636 §4.6: BASE64URL(SHA256(ASCII(code_verifier))). */
export const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/**
 * The authorization_code grant (development sign-in, public clients): the code is spent by its first exchange, and
 * answers an access token for the APIs, an ID token for the client and a refresh token (refresh-token.ts).
 */
export function authorizationCodeGrant(ctx: IdpContext, body: TokenBody): Reply {
  const missing = (['code', 'redirect_uri', 'client_id', 'code_verifier'] as const).filter((k) => !body[k]);
  if (missing.length)
    throw new AppError(
      400,
      'invalid_request',
      `Missing ${missing.join(', ')}`,
      Object.fromEntries(missing.map((k) => [k, ['Required']])),
    );
  const issued = ctx.codes.get(body.code as string);
  // A code is spent by its first exchange, successful or not (RFC 6749 §4.1.2: at most once).
  ctx.codes.delete(body.code as string);
  const invalidGrant = (message: string) => new AppError(400, 'invalid_grant', message);
  if (!issued || issued.expiresAt <= ctx.nowSeconds())
    throw invalidGrant('Unknown, used or expired authorization code');
  if (issued.clientId !== body.client_id) throw invalidGrant('The code was issued to another client');
  if (issued.redirectUri !== body.redirect_uri)
    throw invalidGrant('redirect_uri differs from the authorization request');
  if (!VERIFIER.test(body.code_verifier as string))
    throw invalidGrant('code_verifier must be 43 to 128 unreserved characters (RFC 7636)');
  const expected = Buffer.from(issued.codeChallenge);
  const actual = Buffer.from(s256(body.code_verifier as string));
  if (expected.length !== actual.length || !timingSafeEqual(expected, actual))
    throw invalidGrant('code_verifier does not match the code_challenge');
  // The access token is what the APIs verify: same issuer and audience as every other token here.
  const accessToken = ctx.mint({
    sub: issued.sub,
    roles: issued.roles,
    groups: issued.groups,
    extra: { client_id: issued.clientId, scope: issued.scope },
  });
  // The ID token is for the client itself (OIDC Core §2): audience = its client id, the nonce it sent.
  const idToken = signJwt(
    ctx.key,
    {
      iss: ctx.issuer,
      aud: issued.clientId,
      azp: issued.clientId,
      sub: issued.sub,
      auth_time: issued.authTime,
      roles: issued.roles,
      groups: issued.groups,
      ...(issued.nonce ? { nonce: issued.nonce } : {}),
    },
    ctx.ttl,
    ctx.nowSeconds(),
  );
  const refreshToken = issueRefreshToken(ctx, {
    clientId: issued.clientId,
    sub: issued.sub,
    roles: issued.roles,
    groups: issued.groups,
    scope: issued.scope,
  });
  return {
    status: 200,
    body: {
      ...tokenResponse(accessToken, ctx.ttl),
      id_token: idToken,
      refresh_token: refreshToken,
      scope: issued.scope,
    },
  };
}
