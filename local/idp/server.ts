import { createServer, type Server } from 'node:http';
import { AppError, NotFoundError } from '#functions/shared/errors.js';
import { toErrorResponse } from '#functions/shared/http/error-response.js';
import { corsHeaders, preflightHeaders } from '#lib/cors.js';
import { authorizeRoutes } from './authorize.js';
import { clientAdminRoutes } from './client-admin.js';
import { createIdpContext, type IdpOptions, type MintInput } from './context.js';
import { devTokenRoutes } from './dev-tokens.js';
import { discoveryRoutes } from './discovery.js';
import { type Routes, send } from './http.js';
import { tokenRoutes } from './token.js';

/**
 * The local OpenID Connect identity provider behind `npm start`. It stands in for Cognito (or any OIDC issuer):
 * RS256 tokens with `iss`, `aud`, `sub`, `roles`, `groups`, `iat` and `exp`, verified by the functions exactly as on
 * AWS (aws-jwt-verify against the JWKS below). Routes, one file of this folder per group:
 *
 *   GET  /.well-known/openid-configuration   discovery document (discovery.ts)
 *   GET  /.well-known/jwks.json              the public key (discovery.ts)
 *   GET  /authorize                          development sign-in form (authorization code + PKCE, for the
 *                                            dashboard); POST /authorize signs in and redirects back with a code
 *                                            (authorize.ts)
 *   POST /oauth/token                        client credentials (form or JSON; secret in the body or HTTP Basic),
 *                                            or authorization_code with the PKCE code_verifier (public clients)
 *                                            (token.ts, authorization-code.ts)
 *   GET  /oauth/token/verify                 200 with the claims of a valid bearer token issued for the task
 *                                            services' audience (or `?audience=` one of the provider's), 401
 *                                            otherwise (the spec's `{auth_url}/oauth/token/verify`, used by task
 *                                            services to check the coordinator's token) (token.ts)
 *   POST /clients, DELETE /clients/<id>      create / delete a client-credentials client with role `service` (the
 *                                            coordinator does, for `create_client`); HTTP Basic of an admin client
 *                                            (client-admin.ts)
 *   POST /dev/tokens                         mint any token: {"sub","roles","groups","client_id","expires_in"}
 *                                            (local only; on a non-loopback address only with devTokens: true)
 *                                            (dev-tokens.ts)
 *
 * The sign-in form and /dev/tokens are both "sign whatever you are asked": IDP_DEV_TOKENS=false turns both off.
 * Browsers on `corsOrigins` (the dashboard) may call discovery, the JWKS and the token endpoint.
 *
 * The signing key is created on first start and kept in the data dir, so tokens survive restarts.
 */
export interface Idp {
  /** Where this process can reach the IdP (always loopback). */
  url: string;
  issuer: string;
  audience: string;
  jwksUri: string;
  tokenUrl: string;
  mint(input: MintInput): string;
  stop(): Promise<void>;
}

export async function startIdp(opts: IdpOptions): Promise<Idp> {
  const ctx = createIdpContext(opts);
  const routes: Routes = {
    ...discoveryRoutes(ctx),
    ...tokenRoutes(ctx),
    ...clientAdminRoutes(ctx),
    ...(ctx.devTokens ? { ...authorizeRoutes(ctx), ...devTokenRoutes(ctx) } : {}),
  };

  const server: Server = createServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://local').pathname.replace(/(.)\/$/, '$1');
    const methods =
      routes[path] ??
      (/^\/clients\/[^/]+$/.test(path)
        ? routes['/clients/{id}']
        : /^\/clients\/[^/]+\/secret$/.test(path)
          ? routes['/clients/{id}/secret']
          : undefined);
    const allow = methods ? Object.keys(methods).join(', ') : undefined;
    const cors = corsHeaders(req.headers.origin, opts.corsOrigins ?? []) ?? {};
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
      send(res, { status: 204, headers: Object.keys(cors).length ? { ...cors, ...preflightHeaders() } : {} });
      return;
    }
    try {
      if (!methods) throw new NotFoundError('No such resource');
      const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
      const handle = methods[method];
      if (!handle)
        throw new AppError(405, 'method_not_allowed', `Method "${req.method}" not allowed`, undefined, {
          Allow: allow ?? '',
        });
      const out = await handle(req);
      send(res, { ...out, headers: { ...(allow ? { Allow: allow } : {}), ...cors, ...out.headers } });
    } catch (err) {
      const out = toErrorResponse(err, 'idp');
      send(res, { ...out, headers: { ...(allow ? { Allow: allow } : {}), ...cors, ...out.headers } });
    }
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as { port: number }).port;
  const url = `http://127.0.0.1:${port}`;
  ctx.issuer = (opts.issuer ?? url).replace(/\/$/, '');

  return {
    url,
    issuer: ctx.issuer,
    audience: opts.audience,
    jwksUri: `${url}/.well-known/jwks.json`,
    tokenUrl: `${url}/oauth/token`,
    mint: ctx.mint,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
