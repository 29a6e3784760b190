import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { z } from 'zod';
import { type Clock, systemClock } from '../functions/shared/clock.js';
import { AppError, BadRequestError, NotFoundError, UnauthorizedError } from '../functions/shared/errors.js';
import { parse, toErrorResponse } from '../functions/shared/http.js';
import { jwks, loadOrCreateSigningKey, type SigningKey, signJwt, verifyJwt } from './jwt.js';

/**
 * The local OpenID Connect identity provider behind `npm start`. It stands in for Cognito (or any OIDC issuer):
 * RS256 tokens with `iss`, `aud`, `sub`, `roles`, `groups`, `iat` and `exp`, verified by the functions exactly as on
 * AWS (aws-jwt-verify against the JWKS below). Routes:
 *
 *   GET  /.well-known/openid-configuration   discovery document
 *   GET  /.well-known/jwks.json              the public key
 *   POST /oauth/token                        client credentials (form or JSON; secret in the body or HTTP Basic)
 *   GET  /oauth/token/verify                 200 with the claims of a valid bearer token, 401 otherwise (the
 *                                            spec's `{auth_url}/oauth/token/verify`, used by task services)
 *   POST /dev/tokens                         mint any token: {"sub","roles","groups","client_id","expires_in"}
 *                                            (local only; on a non-loopback address only with devTokens: true)
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
  /** Lifetime of client-credentials tokens, seconds. */
  tokenTtlSeconds?: number;
  /**
   * Serve POST /dev/tokens. Unset: only while the provider listens on loopback (anyone who can reach it could mint
   * an admin token); true or false: as said.
   */
  devTokens?: boolean;
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
});

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

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    ...headers,
  });
  res.end(text);
}

export async function startIdp(opts: IdpOptions): Promise<Idp> {
  const clock = opts.clock ?? systemClock;
  const key: SigningKey = loadOrCreateSigningKey(join(opts.dataDir, 'idp', 'signing-key.json'));
  const ttl = opts.tokenTtlSeconds ?? 3600;
  const nowSeconds = () => Math.floor(clock.nowMs() / 1000);
  const clients = new Map(opts.clients.map((c) => [c.client_id, c]));
  const audiences = [
    ...new Set([opts.audience, ...opts.clients.flatMap((c) => (c.audience ? [c.audience] : []))]),
  ];

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
  ) => Promise<{ status: number; body: unknown; headers?: Record<string, string> }>;
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
          grant_types_supported: ['client_credentials'],
          token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
          response_types_supported: ['token'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
          claims_supported: ['iss', 'aud', 'sub', 'roles', 'groups', 'iat', 'exp', 'jti', 'client_id'],
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
        if (body.grant_type !== 'client_credentials')
          throw new AppError(
            400,
            'unsupported_grant_type',
            'Only grant_type=client_credentials is supported',
            {
              grant_type: ['must be client_credentials'],
            },
          );
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
        const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
        if (!m) throw new UnauthorizedError();
        try {
          // Any token this provider signed, for any of its audiences (the APIs', the task services'), unexpired.
          const claims = verifyJwt(key, m[1], {
            issuer,
            audience: audiences,
            nowSeconds: nowSeconds(),
          });
          return { status: 200, body: claims };
        } catch {
          throw new UnauthorizedError('Invalid or expired token');
        }
      },
    },
  };
  if (opts.devTokens ?? isLoopbackHost(opts.host)) {
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
    const methods = routes[path];
    const allow = methods ? Object.keys(methods).join(', ') : undefined;
    try {
      if (!methods) throw new NotFoundError('No such resource');
      const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
      const handle = methods[method];
      if (!handle)
        throw new AppError(405, 'method_not_allowed', `Method "${req.method}" not allowed`, undefined, {
          Allow: allow ?? '',
        });
      const out = await handle(req);
      send(res, out.status, out.body, { ...(allow ? { Allow: allow } : {}), ...out.headers });
    } catch (err) {
      const out = toErrorResponse(err, 'idp');
      send(res, out.status, out.body, { ...(allow ? { Allow: allow } : {}), ...out.headers });
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
