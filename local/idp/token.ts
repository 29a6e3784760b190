import { AppError, UnauthorizedError } from '#functions/shared/errors.js';
import { parse } from '#functions/shared/http/parse.js';
import { verifyJwt } from '../jwt.js';
import { authorizationCodeGrant, tokenBody } from './authorization-code.js';
import { type IdpContext, tokenResponse } from './context.js';
import {
  basicCredentials,
  decodeBody,
  invalidClient,
  queryOf,
  type Routes,
  readBody,
  sameSecret,
} from './http.js';
import { refreshTokenGrant } from './refresh-token.js';

/**
 * The token endpoint (client credentials, form or JSON, secret in the body or by HTTP Basic; the authorization code
 * with PKCE and its refresh token while the development sign-in is on) and the verify endpoint task services call.
 */
export function tokenRoutes(ctx: IdpContext): Routes {
  return {
    '/oauth/token': {
      POST: async (req) => {
        const body = parse(tokenBody, decodeBody(req, await readBody(req), true));
        if (body.grant_type === 'authorization_code' && ctx.devTokens)
          return authorizationCodeGrant(ctx, body);
        if (body.grant_type === 'refresh_token' && ctx.devTokens) return refreshTokenGrant(ctx, body);
        if (body.grant_type !== 'client_credentials') {
          const allowed = ctx.devTokens
            ? 'client_credentials, authorization_code or refresh_token'
            : 'client_credentials';
          throw new AppError(400, 'unsupported_grant_type', `Only grant_type=${allowed} is supported`, {
            grant_type: [`must be ${allowed}`],
          });
        }
        const basic = basicCredentials(req.headers.authorization);
        // RFC 6749 §2.3: one authentication method per request.
        if (basic && body.client_secret !== undefined)
          throw new AppError(
            400,
            'invalid_request',
            'Send the client secret in the body or by HTTP Basic, not both',
          );
        if (basic && body.client_id !== undefined && body.client_id !== basic.id)
          throw new AppError(
            400,
            'invalid_request',
            'client_id in the body differs from the HTTP Basic one',
            {
              client_id: ['does not match the HTTP Basic client id'],
            },
          );
        const id = basic?.id ?? body.client_id;
        const secret = basic?.secret ?? body.client_secret;
        if (!id || !secret) {
          const fields: Record<string, string[]> = {};
          if (!id) fields.client_id = ['Required (in the body or by HTTP Basic)'];
          if (!secret) fields.client_secret = ['Required (in the body or by HTTP Basic)'];
          throw new AppError(400, 'invalid_request', 'Client credentials are missing', fields);
        }
        const made = ctx.created.get(id);
        if (made && ctx.created.verify(id, secret)) {
          const token = ctx.mint({
            sub: made.client_id,
            roles: made.roles,
            groups: [],
            extra: { client_id: made.client_id },
          });
          return { status: 200, body: tokenResponse(token, ctx.ttl) };
        }
        const client = ctx.clients.get(id);
        if (!client || !sameSecret(secret, client.client_secret)) throw invalidClient();
        const token = ctx.mint({
          sub: client.client_id,
          roles: client.roles,
          groups: client.groups,
          audience: client.audience,
          extra: { client_id: client.client_id },
        });
        return { status: 200, body: tokenResponse(token, ctx.ttl) };
      },
    },
    '/oauth/token/verify': {
      GET: async (req) => {
        // The audience is checked, never "any of ours": a token for the APIs is not the coordinator's token.
        const asked = queryOf(req).get('audience');
        const audience = asked ?? ctx.verifyAudience;
        if (!ctx.audiences.includes(audience))
          throw new AppError(400, 'invalid_request', `Unknown audience ${JSON.stringify(audience)}`, {
            audience: [`must be one of ${ctx.audiences.join(', ')}`],
          });
        const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
        if (!m) throw new UnauthorizedError();
        try {
          const claims = verifyJwt(ctx.key, m[1], {
            issuer: ctx.issuer,
            audience: [audience],
            nowSeconds: ctx.nowSeconds(),
          });
          return { status: 200, body: claims };
        } catch {
          throw new UnauthorizedError(`Invalid or expired token, or not one for ${audience}`);
        }
      },
    },
  };
}
