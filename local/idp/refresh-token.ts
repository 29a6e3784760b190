import { z } from 'zod';
import { AppError } from '#functions/shared/errors.js';
import { signJwt, verifyJwt } from '../jwt.js';
import { type IdpContext, tokenResponse } from './context.js';
import type { Reply } from './http.js';

/**
 * Refresh tokens of the development sign-in (the authorization code flow of the dashboard and `drc login`): a token
 * signed by the provider's key for the client that signed in (its `aud`), carrying who signed in and with which
 * roles and groups, so the provider keeps no state and a refresh survives its restart. The `token_use` claim and the
 * client-id audience keep it from passing for an access token at the APIs, whose audience it never has.
 */
export const REFRESH_TTL_SECONDS = 12 * 3600;

const refreshClaims = z.object({
  sub: z.string().min(1),
  token_use: z.literal('refresh'),
  roles: z.array(z.string()),
  groups: z.array(z.string()),
  scope: z.string(),
});

export function issueRefreshToken(
  ctx: IdpContext,
  who: { clientId: string; sub: string; roles: string[]; groups: string[]; scope: string },
): string {
  return signJwt(
    ctx.key,
    {
      iss: ctx.issuer,
      aud: who.clientId,
      sub: who.sub,
      token_use: 'refresh',
      roles: who.roles,
      groups: who.groups,
      scope: who.scope,
    },
    REFRESH_TTL_SECONDS,
    ctx.nowSeconds(),
  );
}

/** grant_type=refresh_token (RFC 6749 §6), for public clients: a new access token for the same person. */
export function refreshTokenGrant(
  ctx: IdpContext,
  body: { client_id?: string; refresh_token?: string },
): Reply {
  if (!body.refresh_token || !body.client_id)
    throw new AppError(400, 'invalid_request', 'Missing refresh_token or client_id', {
      ...(body.refresh_token ? {} : { refresh_token: ['Required'] }),
      ...(body.client_id ? {} : { client_id: ['Required'] }),
    });
  let claims: z.infer<typeof refreshClaims>;
  try {
    claims = refreshClaims.parse(
      verifyJwt(ctx.key, body.refresh_token, {
        issuer: ctx.issuer,
        audience: [body.client_id],
        nowSeconds: ctx.nowSeconds(),
      }),
    );
  } catch {
    throw new AppError(
      400,
      'invalid_grant',
      'Invalid or expired refresh token, or one issued to another client',
    );
  }
  const accessToken = ctx.mint({
    sub: claims.sub,
    roles: claims.roles,
    groups: claims.groups,
    extra: { client_id: body.client_id, scope: claims.scope },
  });
  return { status: 200, body: { ...tokenResponse(accessToken, ctx.ttl), scope: claims.scope } };
}
