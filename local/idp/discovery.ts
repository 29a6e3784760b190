import { jwks } from '../jwt.js';
import type { IdpContext } from './context.js';
import type { Routes } from './http.js';

/** The discovery document and the public key: what verifiers (aws-jwt-verify, task services, browsers) read. */
export function discoveryRoutes(ctx: IdpContext): Routes {
  return {
    '/.well-known/openid-configuration': {
      GET: async () => ({
        status: 200,
        headers: { 'Cache-Control': 'public, max-age=300' },
        body: {
          issuer: ctx.issuer,
          jwks_uri: `${ctx.issuer}/.well-known/jwks.json`,
          token_endpoint: `${ctx.issuer}/oauth/token`,
          // Not an OIDC field: where task services check a token (the spec's {auth_url}/oauth/token/verify).
          token_verify_endpoint: `${ctx.issuer}/oauth/token/verify`,
          ...(ctx.devTokens
            ? {
                // The development sign-in (authorization code + PKCE) for browser apps such as the dashboard.
                authorization_endpoint: `${ctx.issuer}/authorize`,
                grant_types_supported: ['client_credentials', 'authorization_code', 'refresh_token'],
                response_types_supported: ['code'],
                response_modes_supported: ['query'],
                code_challenge_methods_supported: ['S256'],
                scopes_supported: ['openid'],
              }
            : { grant_types_supported: ['client_credentials'], response_types_supported: ['token'] }),
          token_endpoint_auth_methods_supported: [
            'client_secret_basic',
            'client_secret_post',
            ...(ctx.devTokens ? ['none'] : []),
          ],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
          claims_supported: [
            'iss',
            'aud',
            'sub',
            'roles',
            'groups',
            'iat',
            'exp',
            'jti',
            'client_id',
            'scope',
            'nonce',
            'azp',
            'auth_time',
          ],
        },
      }),
    },
    '/.well-known/jwks.json': {
      GET: async () => ({
        status: 200,
        body: jwks(ctx.key),
        headers: { 'Cache-Control': 'public, max-age=300' },
      }),
    },
  };
}
