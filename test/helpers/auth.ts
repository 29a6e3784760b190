import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateSigningKey, jwks, type SigningKey, signJwt } from '#local/jwt.js';

/**
 * A tiny identity provider for tests: a fresh RS256 key, its JWKS served on a random 127.0.0.1 port, and a client
 * credentials token endpoint for the coordinator's own token. Tokens are real JWTs checked by the same
 * aws-jwt-verify code the functions use.
 */
export interface TestIdp {
  issuer: string;
  /** The APIs' audience (AUTH_AUDIENCE). */
  audience: string;
  /** The audience of the coordinator's own token, as task services verify it; never accepted by the APIs. */
  taskServiceAudience: string;
  jwksUri: string;
  tokenUrl: string;
  /** AUTH_* and COORDINATOR_TOKEN_* settings pointing at this provider. */
  env: Record<string, string>;
  /** Tokens handed out by the token endpoint, newest last. */
  issued: string[];
  /** Bodies the token endpoint received. */
  tokenRequests: string[];
  /** The token endpoint answers the next `n` requests with 503, as a provider in an outage does. */
  refuseTokens(n: number): void;
  /** How many token requests were refused so far. */
  refused(): number;
  mint(opts?: MintOptions): string;
  admin(): string;
  service(): string;
  reader(): string;
  close(): Promise<void>;
}

export interface MintOptions {
  sub?: string;
  roles?: string[];
  groups?: string[];
  /** Seconds until expiry; negative for an expired token. */
  expiresIn?: number;
  issuer?: string;
  audience?: string;
  /** Sign with another key (same kid): a forged token. */
  key?: SigningKey;
  extra?: Record<string, unknown>;
}

export const TEST_CLIENT_ID = 'coordinator';
export const TEST_CLIENT_SECRET = 'coordinator-secret';

export async function startTestIdp(opts: { tokenLifetime?: number } = {}): Promise<TestIdp> {
  const key = generateSigningKey();
  const audience = 'release-coordinator-test';
  const taskServiceAudience = 'task-services-test';
  const issued: string[] = [];
  const tokenRequests: string[] = [];
  let toRefuse = 0;
  let refused = 0;
  let issuer = '';
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method === 'GET' && req.url === '/.well-known/jwks.json') return json(200, jwks(key));
      if (req.method === 'POST' && req.url === '/oauth/token') {
        const body = Buffer.concat(chunks).toString('utf8');
        tokenRequests.push(body);
        if (toRefuse > 0) {
          toRefuse--;
          refused++;
          return json(503, { error: 'temporarily_unavailable' });
        }
        const form = new URLSearchParams(body);
        if (form.get('client_id') !== TEST_CLIENT_ID || form.get('client_secret') !== TEST_CLIENT_SECRET)
          return json(401, { error: 'invalid_client' });
        const lifetime = opts.tokenLifetime ?? 3600;
        const token = signJwt(
          key,
          {
            iss: issuer,
            aud: taskServiceAudience,
            sub: TEST_CLIENT_ID,
            client_id: TEST_CLIENT_ID,
            roles: ['service'],
          },
          lifetime,
        );
        issued.push(token);
        return json(200, { access_token: token, token_type: 'Bearer', expires_in: lifetime });
      }
      json(404, { error: 'not found' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const mint = (o: MintOptions = {}) =>
    signJwt(
      o.key ?? key,
      {
        iss: o.issuer ?? issuer,
        aud: o.audience ?? audience,
        sub: o.sub ?? 'tester',
        roles: o.roles ?? [],
        groups: o.groups ?? [],
        ...o.extra,
      },
      o.expiresIn ?? 3600,
    );
  return {
    issuer,
    audience,
    taskServiceAudience,
    jwksUri: `${issuer}/.well-known/jwks.json`,
    tokenUrl: `${issuer}/oauth/token`,
    env: {
      AUTH_ISSUER: issuer,
      AUTH_AUDIENCE: audience,
      AUTH_JWKS_URI: `${issuer}/.well-known/jwks.json`,
      COORDINATOR_TOKEN_URL: `${issuer}/oauth/token`,
      COORDINATOR_CLIENT_ID: TEST_CLIENT_ID,
      COORDINATOR_CLIENT_SECRET: TEST_CLIENT_SECRET,
    },
    issued,
    tokenRequests,
    refuseTokens: (n) => {
      toRefuse = n;
    },
    refused: () => refused,
    mint,
    admin: () => mint({ sub: 'admin-user', roles: ['admin'] }),
    service: () => mint({ sub: 'task-service', roles: ['service'] }),
    reader: () => mint({ sub: 'reader', roles: ['user'] }),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
