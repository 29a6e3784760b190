import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { z } from 'zod';
import { type Clock, systemClock } from '#functions/shared/clock.js';
import { AppError, BadRequestError, NotFoundError, UnauthorizedError } from '#functions/shared/errors.js';
import { toErrorResponse } from '#functions/shared/http/error-response.js';
import { parse } from '#functions/shared/http/parse.js';
import { corsHeaders, preflightHeaders } from '#lib/cors.js';
import { CreatedClients } from './idp-clients.js';
import { jwks, loadOrCreateSigningKey, type SigningKey, signJwt, verifyJwt } from './jwt.js';
import { errorPage, signInPage } from './sign-in-page.js';

/**
 * The local OpenID Connect identity provider behind `npm start`. It stands in for Cognito (or any OIDC issuer):
 * RS256 tokens with `iss`, `aud`, `sub`, `roles`, `groups`, `iat` and `exp`, verified by the functions exactly as on
 * AWS (aws-jwt-verify against the JWKS below). Routes:
 *
 *   GET  /.well-known/openid-configuration   discovery document
 *   GET  /.well-known/jwks.json              the public key
 *   GET  /authorize                          development sign-in form (authorization code + PKCE, for the
 *                                            dashboard); POST /authorize signs in and redirects back with a code
 *   POST /oauth/token                        client credentials (form or JSON; secret in the body or HTTP Basic),
 *                                            or authorization_code with the PKCE code_verifier (public clients)
 *   GET  /oauth/token/verify                 200 with the claims of a valid bearer token issued for the task
 *                                            services' audience (or `?audience=` one of the provider's), 401
 *                                            otherwise (the spec's `{auth_url}/oauth/token/verify`, used by task
 *                                            services to check the coordinator's token)
 *   POST /clients, DELETE /clients/<id>      create / delete a client-credentials client with role `service` (the
 *                                            coordinator does, for `create_client`); HTTP Basic of an admin client
 *   POST /dev/tokens                         mint any token: {"sub","roles","groups","client_id","expires_in"}
 *                                            (local only; on a non-loopback address only with devTokens: true)
 *
 * The sign-in form and /dev/tokens are both "sign whatever you are asked": IDP_DEV_TOKENS=false turns both off.
 * Browsers on `corsOrigins` (the dashboard) may call discovery, the JWKS and the token endpoint.
 *
 * The signing key is created on first start and kept in the data dir, so tokens survive restarts.
 */

export const idpClient = z.strictObject({
  client_id: z.string().min(1),
  client_secret: z.string().min(1),
  roles: z.array(z.string()).default([]),
  groups: z.array(z.string()).default([]),
  /** The `aud` of this client's tokens; default the provider's audience (the APIs'). */
  audience: z.string().min(1).optional(),
});
export type IdpClient = z.infer<typeof idpClient>;

/** The audience of the token the coordinator sends to task services: one the coordinator's APIs never accept. */
export const TASK_SERVICE_AUDIENCE = 'task-services';

/**
 * Clients allowed to use client credentials unless IDP_CLIENTS says otherwise. `coordinator` is the coordinator
 * itself: it calls task services with this token, whose audience is TASK_SERVICE_AUDIENCE, so a task service that
 * replays it against the coordinator is refused (401). `task-service` is for task services calling back
 * (PATCH /tasks, POST /events); `admin` is a machine admin for scripts.
 */
export const DEFAULT_CLIENTS: IdpClient[] = [
  {
    client_id: 'coordinator',
    client_secret: 'coordinator-local-secret',
    roles: ['service'],
    groups: [],
    audience: TASK_SERVICE_AUDIENCE,
  },
  { client_id: 'task-service', client_secret: 'task-service-local-secret', roles: ['service'], groups: [] },
  { client_id: 'admin', client_secret: 'admin-local-secret', roles: ['admin'], groups: [] },
];

/** IDP_CLIENTS: a JSON array of {client_id, client_secret, roles?, groups?}. */
export function parseClients(json: string | undefined): IdpClient[] {
  if (json === undefined || json.trim() === '') return DEFAULT_CLIENTS;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new Error('Invalid configuration: IDP_CLIENTS is not valid JSON');
  }
  const result = z.array(idpClient).min(1).safeParse(raw);
  if (!result.success)
    throw new Error(
      `Invalid configuration: IDP_CLIENTS: ${result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const ids = result.data.map((c) => c.client_id);
  if (new Set(ids).size !== ids.length)
    throw new Error('Invalid configuration: IDP_CLIENTS repeats a client_id');
  return result.data;
}

export interface IdpOptions {
  /** 0 picks a free port. */
  port: number;
  host: string;
  /** The signing key is kept in <dataDir>/idp/signing-key.json. */
  dataDir: string;
  /** Defaults to http://127.0.0.1:<port>. */
  issuer?: string;
  /** The `aud` of every token, and the audience the verify endpoint accepts. */
  audience: string;
  clients: IdpClient[];
  /**
   * The audience `/oauth/token/verify` checks when the request names none: the task services' (the coordinator's
   * token), so a token for the APIs, replayed at a task service that verifies here, is refused.
   */
  verifyAudience?: string;
  /** Lifetime of client-credentials tokens, seconds. */
  tokenTtlSeconds?: number;
  /**
   * Serve POST /dev/tokens and the development sign-in (GET/POST /authorize), both of which sign whatever they are
   * asked. Unset: only while the provider listens on loopback (anyone who can reach it could mint an admin token);
   * true or false: as said.
   */
  devTokens?: boolean;
  /** Browser origins allowed by CORS (the dashboard's). */
  corsOrigins?: readonly string[];
  /**
   * Redirect URIs the sign-in accepts besides loopback ones (http(s) on 127.0.0.0/8, localhost or [::1]), e.g. the
   * dashboard's URL when it is served on another interface.
   */
  redirectUris?: readonly string[];
  clock?: Clock;
}

export interface MintInput {
  sub: string;
  roles?: string[];
  groups?: string[];
  expiresIn?: number;
  /** `aud` of the token; default the provider's audience. */
  audience?: string;
  extra?: Record<string, unknown>;
}

/** Addresses only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '::ffff:127.0.0.1';
}

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

/** Longest lifetime a dev token may ask for: 30 days. */
export const MAX_DEV_TOKEN_SECONDS = 30 * 24 * 3600;

const newClientBody = z.strictObject({
  /** For people reading the list: the task service's name. */
  name: z.string().max(200).default(''),
});

const devTokenBody = z.strictObject({
  sub: z.string().min(1),
  roles: z.array(z.string().min(1)).default([]),
  groups: z.array(z.string().min(1)).default([]),
  /** Becomes the token's client_id claim: the identity a task service can be bound to. */
  client_id: z.string().min(1).max(256).optional(),
  expires_in: z.number().int().min(1).max(MAX_DEV_TOKEN_SECONDS).default(3600),
});

// RFC 6749 §3.2: the token endpoint must ignore parameters it does not know, so this body is not strict.
const tokenBody = z.object({
  grant_type: z.string().min(1),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
  scope: z.string().optional(),
  // authorization_code
  code: z.string().optional(),
  redirect_uri: z.string().optional(),
  code_verifier: z.string().optional(),
});

/** Lifetime of an authorization code (RFC 6749 §4.1.2 recommends at most 10 minutes). */
export const CODE_TTL_SECONDS = 60;

/** What a code stands for until it is exchanged, once. */
interface IssuedCode {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  sub: string;
  roles: string[];
  groups: string[];
  nonce?: string;
  scope: string;
  authTime: number;
  expiresAt: number;
}

/** The authorization request's parameters (query of GET /authorize, hidden fields of POST /authorize). */
const authorizeParams = z.object({
  client_id: z.string().min(1),
  redirect_uri: z.string().min(1),
  response_type: z.string().optional(),
  state: z.string().optional(),
  nonce: z.string().optional(),
  scope: z.string().optional(),
  code_challenge: z.string().optional(),
  code_challenge_method: z.string().optional(),
});
type AuthorizeParams = z.infer<typeof authorizeParams>;

const LOOPBACK = /^(127(\.\d{1,3}){3}|localhost|\[::1\])$/i;

/** Comma-separated form input to a clean list: trimmed, no empties, no repeats. */
const commaList = (s: string | undefined) => [
  ...new Set(
    (s ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  ),
];

/** RFC 7636 §4.6: BASE64URL(SHA256(ASCII(code_verifier))). */
export const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

const MAX_BODY = 64 * 1024;

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new AppError(413, 'payload_too_large', 'Request body is larger than 64 KiB'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * The token endpoint takes form-encoded (RFC 6749) or JSON bodies, by Content-Type. Other routes read JSON whatever
 * the Content-Type says, like the coordinator API, so `curl -d '{...}'` works without a header.
 */
function decodeBody(req: IncomingMessage, raw: Buffer, allowForm: boolean): unknown {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  const text = raw.toString('utf8');
  if (allowForm && type === 'application/x-www-form-urlencoded')
    return Object.fromEntries(new URLSearchParams(text));
  if (allowForm && type !== '' && type !== 'application/json')
    throw new AppError(
      415,
      'unsupported_media_type',
      'Send application/x-www-form-urlencoded or application/json',
    );
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new BadRequestError('Request body is not valid JSON');
  }
}

const sameSecret = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** RFC 6749 §2.3.1: HTTP Basic with form-urlencoded id and secret. */
function basicCredentials(header: string | undefined): { id: string; secret: string } | null {
  const m = /^Basic\s+(\S+)\s*$/i.exec(header ?? '');
  if (!m) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new AppError(400, 'invalid_request', 'Malformed HTTP Basic credentials');
  const dec = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
  return { id: dec(decoded.slice(0, colon)), secret: dec(decoded.slice(colon + 1)) };
}

const invalidClient = () =>
  new AppError(401, 'invalid_client', 'Unknown client or wrong secret', undefined, {
    'WWW-Authenticate': 'Basic realm="local-idp"',
  });

/** JSON unless `html` is given; nothing an identity provider answers may be cached. */
function send(
  res: ServerResponse,
  out: { status: number; body?: unknown; html?: string; headers?: Record<string, string> },
) {
  const text = out.html ?? (out.body === undefined ? '' : JSON.stringify(out.body));
  res.writeHead(out.status, {
    'Content-Type': out.html !== undefined ? 'text/html; charset=utf-8' : 'application/json',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    ...(out.html !== undefined
      ? {
          // The page itself needs nothing but its inline style; it may not be framed (clickjacking).
          'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
          'X-Frame-Options': 'DENY',
          'Referrer-Policy': 'no-referrer',
        }
      : {}),
    ...out.headers,
  });
  res.end(text);
}

/** An OAuth error sent back to the client's redirect URI (RFC 6749 §4.1.2.1). */
function redirectWith(redirectUri: string, params: Record<string, string | undefined>) {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  return { status: 302, headers: { Location: url.toString() } };
}

export async function startIdp(opts: IdpOptions): Promise<Idp> {
  const clock = opts.clock ?? systemClock;
  const key: SigningKey = loadOrCreateSigningKey(join(opts.dataDir, 'idp', 'signing-key.json'));
  const ttl = opts.tokenTtlSeconds ?? 3600;
  const nowSeconds = () => Math.floor(clock.nowMs() / 1000);
  const clients = new Map(opts.clients.map((c) => [c.client_id, c]));
  const created = new CreatedClients(join(opts.dataDir, 'idp', 'clients.json'));
  const verifyAudience = opts.verifyAudience ?? TASK_SERVICE_AUDIENCE;
  const audiences = [
    ...new Set([
      opts.audience,
      verifyAudience,
      ...opts.clients.flatMap((c) => (c.audience ? [c.audience] : [])),
    ]),
  ];
  const devTokens = opts.devTokens ?? isLoopbackHost(opts.host);
  const codes = new Map<string, IssuedCode>();
  const extraRedirects = new Set(opts.redirectUris ?? []);

  // Filled in once the port is known (port 0 picks one).
  let issuer = '';
  let url = '';

  const mint = (input: MintInput) =>
    signJwt(
      key,
      {
        iss: issuer,
        aud: input.audience ?? opts.audience,
        sub: input.sub,
        roles: input.roles ?? [],
        groups: input.groups ?? [],
        ...input.extra,
      },
      input.expiresIn ?? ttl,
      nowSeconds(),
    );

  const tokenResponse = (token: string, expiresIn: number) => ({
    access_token: token,
    token_type: 'Bearer',
    expires_in: expiresIn,
  });

  type Handler = (
    req: IncomingMessage,
  ) => Promise<{ status: number; body?: unknown; html?: string; headers?: Record<string, string> }>;

  /**
   * Checks what can only be answered on this page, never by redirecting: an unknown client or a redirect URI that
   * is not allowed (RFC 6749 §4.1.2.1). Client-credentials clients have secrets and no business here; every other
   * client id is a public client of this development provider.
   */
  const checkClient = (p: AuthorizeParams): string | null => {
    if (clients.has(p.client_id) || created.has(p.client_id))
      return `${p.client_id} is a client-credentials client; sign-in is for public clients such as the dashboard`;
    let url: URL;
    try {
      url = new URL(p.redirect_uri);
    } catch {
      return 'redirect_uri is not an absolute URL';
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'redirect_uri must be http or https';
    if (url.hash) return 'redirect_uri must not have a fragment';
    if (!LOOPBACK.test(url.hostname) && !extraRedirects.has(p.redirect_uri))
      return `redirect_uri ${p.redirect_uri} is not a loopback URL nor one of the dashboard's`;
    return null;
  };

  /** Errors the client hears about at its redirect URI; null when the request may go on. */
  const checkRequest = (p: AuthorizeParams): Record<string, string> | null => {
    if (p.response_type !== 'code')
      return {
        error: 'unsupported_response_type',
        error_description: 'Only response_type=code is supported',
      };
    if (!p.code_challenge || p.code_challenge_method !== 'S256')
      return {
        error: 'invalid_request',
        error_description: 'PKCE is required: code_challenge with code_challenge_method=S256',
      };
    return null;
  };

  const authorizeHidden = (p: AuthorizeParams) =>
    Object.fromEntries(Object.entries(p).filter((e): e is [string, string] => typeof e[1] === 'string'));

  const authorizationCodeGrant = (body: z.infer<typeof tokenBody>) => {
    const missing = (['code', 'redirect_uri', 'client_id', 'code_verifier'] as const).filter((k) => !body[k]);
    if (missing.length)
      throw new AppError(
        400,
        'invalid_request',
        `Missing ${missing.join(', ')}`,
        Object.fromEntries(missing.map((k) => [k, ['Required']])),
      );
    const issued = codes.get(body.code as string);
    // A code is spent by its first exchange, successful or not (RFC 6749 §4.1.2: at most once).
    codes.delete(body.code as string);
    const invalidGrant = (message: string) => new AppError(400, 'invalid_grant', message);
    if (!issued || issued.expiresAt <= nowSeconds())
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
    const accessToken = mint({
      sub: issued.sub,
      roles: issued.roles,
      groups: issued.groups,
      extra: { client_id: issued.clientId, scope: issued.scope },
    });
    // The ID token is for the client itself (OIDC Core §2): audience = its client id, the nonce it sent.
    const idToken = signJwt(
      key,
      {
        iss: issuer,
        aud: issued.clientId,
        azp: issued.clientId,
        sub: issued.sub,
        auth_time: issued.authTime,
        roles: issued.roles,
        groups: issued.groups,
        ...(issued.nonce ? { nonce: issued.nonce } : {}),
      },
      ttl,
      nowSeconds(),
    );
    return {
      status: 200,
      body: { ...tokenResponse(accessToken, ttl), id_token: idToken, scope: issued.scope },
    };
  };
  const routes: Record<string, Partial<Record<string, Handler>>> = {
    '/.well-known/openid-configuration': {
      GET: async () => ({
        status: 200,
        headers: { 'Cache-Control': 'public, max-age=300' },
        body: {
          issuer,
          jwks_uri: `${issuer}/.well-known/jwks.json`,
          token_endpoint: `${issuer}/oauth/token`,
          // Not an OIDC field: where task services check a token (the spec's {auth_url}/oauth/token/verify).
          token_verify_endpoint: `${issuer}/oauth/token/verify`,
          ...(devTokens
            ? {
                // The development sign-in (authorization code + PKCE) for browser apps such as the dashboard.
                authorization_endpoint: `${issuer}/authorize`,
                grant_types_supported: ['client_credentials', 'authorization_code'],
                response_types_supported: ['code'],
                response_modes_supported: ['query'],
                code_challenge_methods_supported: ['S256'],
                scopes_supported: ['openid'],
              }
            : { grant_types_supported: ['client_credentials'], response_types_supported: ['token'] }),
          token_endpoint_auth_methods_supported: [
            'client_secret_basic',
            'client_secret_post',
            ...(devTokens ? ['none'] : []),
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
        body: jwks(key),
        headers: { 'Cache-Control': 'public, max-age=300' },
      }),
    },
    '/oauth/token': {
      POST: async (req) => {
        const body = parse(tokenBody, decodeBody(req, await readBody(req), true));
        if (body.grant_type === 'authorization_code' && devTokens) return authorizationCodeGrant(body);
        if (body.grant_type !== 'client_credentials') {
          const allowed = devTokens ? 'client_credentials or authorization_code' : 'client_credentials';
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
        const made = created.get(id);
        if (made && created.verify(id, secret)) {
          const token = mint({
            sub: made.client_id,
            roles: made.roles,
            groups: [],
            extra: { client_id: made.client_id },
          });
          return { status: 200, body: tokenResponse(token, ttl) };
        }
        const client = clients.get(id);
        if (!client || !sameSecret(secret, client.client_secret)) throw invalidClient();
        const token = mint({
          sub: client.client_id,
          roles: client.roles,
          groups: client.groups,
          audience: client.audience,
          extra: { client_id: client.client_id },
        });
        return { status: 200, body: tokenResponse(token, ttl) };
      },
    },
    '/oauth/token/verify': {
      GET: async (req) => {
        // The audience is checked, never "any of ours": a token for the APIs is not the coordinator's token.
        const asked = new URL(req.url ?? '/', 'http://local').searchParams.get('audience');
        const audience = asked ?? verifyAudience;
        if (!audiences.includes(audience))
          throw new AppError(400, 'invalid_request', `Unknown audience ${JSON.stringify(audience)}`, {
            audience: [`must be one of ${audiences.join(', ')}`],
          });
        const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
        if (!m) throw new UnauthorizedError();
        try {
          const claims = verifyJwt(key, m[1], { issuer, audience: [audience], nowSeconds: nowSeconds() });
          return { status: 200, body: claims };
        } catch {
          throw new UnauthorizedError(`Invalid or expired token, or not one for ${audience}`);
        }
      },
    },
  };
  /** The client-management routes: HTTP Basic credentials of a configured client with the admin role. */
  const requireAdminClient = (req: IncomingMessage) => {
    const basic = basicCredentials(req.headers.authorization);
    const client = basic ? clients.get(basic.id) : undefined;
    if (!basic || !client || !sameSecret(basic.secret, client.client_secret)) throw invalidClient();
    if (!client.roles.includes('admin'))
      throw new AppError(403, 'forbidden', `Client ${client.client_id} lacks the admin role`);
  };
  routes['/clients'] = {
    POST: async (req) => {
      requireAdminClient(req);
      const body = parse(newClientBody, decodeBody(req, await readBody(req), false));
      const { client, secret } = created.create(body.name, (id) => clients.has(id), new Date(clock.nowMs()));
      return {
        status: 200,
        body: { client_id: client.client_id, client_secret: secret, roles: client.roles, name: client.name },
      };
    },
  };
  routes['/clients/{id}'] = {
    DELETE: async (req) => {
      requireAdminClient(req);
      const id = decodeURIComponent(new URL(req.url ?? '/', 'http://local').pathname.split('/')[2] ?? '');
      // Only clients made here: the configured ones (IDP_CLIENTS) are the stack's own.
      if (!created.delete(id)) throw new NotFoundError(`No created client ${id}`);
      return { status: 204 };
    },
  };

  if (devTokens) {
    routes['/authorize'] = {
      GET: async (req) => {
        const query = Object.fromEntries(new URL(req.url ?? '/', 'http://local').searchParams);
        const parsed = authorizeParams.safeParse(query);
        if (!parsed.success)
          return { status: 400, html: errorPage('client_id and redirect_uri are required') };
        const p = parsed.data;
        const refused = checkClient(p);
        if (refused) return { status: 400, html: errorPage(refused) };
        const error = checkRequest(p);
        if (error) return redirectWith(p.redirect_uri, { ...error, state: p.state });
        return {
          status: 200,
          html: signInPage({
            hidden: authorizeHidden(p),
            clientId: p.client_id,
            redirectUri: p.redirect_uri,
          }),
        };
      },
      POST: async (req) => {
        // The form posts the request's parameters as hidden fields; a client that posts only what the user typed
        // and keeps the parameters in the URL is served too (the body wins).
        const query = Object.fromEntries(new URL(req.url ?? '/', 'http://local').searchParams);
        const body = decodeBody(req, await readBody(req), true) as Record<string, string> | undefined;
        const form: Record<string, string> = { ...query, ...body };
        const parsed = authorizeParams.safeParse(form);
        if (!parsed.success)
          return { status: 400, html: errorPage('client_id and redirect_uri are required') };
        const p = parsed.data;
        const refused = checkClient(p);
        if (refused) return { status: 400, html: errorPage(refused) };
        const error = checkRequest(p);
        if (error) return redirectWith(p.redirect_uri, { ...error, state: p.state });
        const sub = (form.sub ?? '').trim();
        const values = { sub, roles: form.roles ?? '', groups: form.groups ?? '' };
        if (!sub)
          return {
            status: 400,
            html: signInPage({
              hidden: authorizeHidden(p),
              clientId: p.client_id,
              redirectUri: p.redirect_uri,
              values,
              error: 'Enter a user name (sub).',
            }),
          };
        const code = randomBytes(32).toString('base64url');
        const now = nowSeconds();
        // Expired codes are dropped whenever a new one is issued, so the map stays as small as the traffic.
        for (const [c, issued] of codes) if (issued.expiresAt <= now) codes.delete(c);
        codes.set(code, {
          clientId: p.client_id,
          redirectUri: p.redirect_uri,
          codeChallenge: p.code_challenge as string,
          // Exactly what was typed: the token carries these roles and groups, nothing more.
          sub,
          roles: commaList(values.roles),
          groups: commaList(values.groups),
          nonce: p.nonce,
          scope: p.scope ?? 'openid',
          authTime: now,
          expiresAt: now + CODE_TTL_SECONDS,
        });
        return redirectWith(p.redirect_uri, { code, state: p.state });
      },
    };
    routes['/dev/tokens'] = {
      POST: async (req) => {
        const body = parse(devTokenBody, decodeBody(req, await readBody(req), false));
        const token = mint({
          sub: body.sub,
          roles: body.roles,
          groups: body.groups,
          expiresIn: body.expires_in,
          extra: body.client_id ? { client_id: body.client_id } : undefined,
        });
        return { status: 200, body: tokenResponse(token, body.expires_in) };
      },
    };
  }

  const server: Server = createServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://local').pathname.replace(/(.)\/$/, '$1');
    const methods = routes[path] ?? (/^\/clients\/[^/]+$/.test(path) ? routes['/clients/{id}'] : undefined);
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
  url = `http://127.0.0.1:${port}`;
  issuer = (opts.issuer ?? url).replace(/\/$/, '');

  return {
    url,
    issuer,
    audience: opts.audience,
    jwksUri: `${url}/.well-known/jwks.json`,
    tokenUrl: `${url}/oauth/token`,
    mint,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
