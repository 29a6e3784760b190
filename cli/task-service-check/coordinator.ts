import { createHash, generateKeyPair, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { jwks, type SigningKey, signJwt, verifyJwt } from '#local/jwt.js';
import {
  CALLBACK_TRANSITIONS,
  TASK_SERVICE_AUDIENCE,
  TASK_SERVICE_SCOPE,
  type TaskState,
} from '#packages/task-service/src/contract.js';
import type { Contract } from './contract.js';

/**
 * What a task service needs from a coordinator, served by the check on a port of its own: an issuer with a JWKS (the
 * check mints the coordinator's RS256 tokens), the verify endpoint (`/oauth/token/verify`, for services that ask
 * instead of verifying JWTs), an OAuth token endpoint for the service's client credentials, and the callback routes
 * (`PATCH /tasks/<id>`, `POST /events`). Callbacks are judged as the coordinator judges them
 * (docs/task-service-api.md, Reporting back) and recorded for the callbacks rule.
 */
export interface CoordinatorOptions {
  host: string;
  port: number;
  clientId: string;
  clientSecret: string;
  audience: string;
  /**
   * The coordinator's token as the local identity provider issues it (`aud`, the default), or as Cognito does: an
   * access token with no `aud`, the task services' scope and the coordinator's `client_id`.
   */
  tokenShape?: TokenShape;
}

export type TokenShape = 'aud' | 'cognito';

/** The coordinator's app client id in the Cognito shape (AUTH_CLIENT_ID). */
export const CHECK_COORDINATOR_CLIENT = 'task-service-check-coordinator';

export interface Callback {
  taskId: string;
  at: number;
  body: unknown;
  requestId: string | undefined;
  status: number;
  problem?: string;
  /** Answered 503 with Retry-After on purpose, to see the service send it again. */
  probe?: boolean;
  /** The same report as a probed one, sent again. */
  retry?: boolean;
}

export interface CheckTask {
  id: string;
  releaseId: string;
  requestId: string;
  state: TaskState;
  progress: number;
  /** When the service answered `cancel` with canceled: later reports of other states mean the work went on. */
  canceledAt?: number;
  /** Answer the first callback 503 with Retry-After: 1. */
  probeRetry?: boolean;
  probed?: string;
}

/** What a service checked from `url` must be configured with, by the names the kit and the reference service read. */
export function serviceConfig(
  url: string,
  opts: Pick<CoordinatorOptions, 'clientId' | 'clientSecret' | 'audience' | 'tokenShape'>,
  secret: string,
): Record<string, string> {
  const audience: Record<string, string> =
    opts.tokenShape === 'cognito'
      ? { AUTH_SCOPE: TASK_SERVICE_SCOPE, AUTH_CLIENT_ID: CHECK_COORDINATOR_CLIENT }
      : { AUTH_AUDIENCE: opts.audience };
  return {
    COORDINATOR_URL: url,
    AUTH_ISSUER: url,
    AUTH_JWKS_URI: `${url}/.well-known/jwks.json`,
    ...audience,
    AUTH_URL: url,
    TOKEN_URL: `${url}/oauth/token`,
    CLIENT_ID: opts.clientId,
    CLIENT_SECRET: opts.clientSecret,
    WEBHOOK_SECRET: secret,
  };
}

/** The callback token's audience: the coordinator's APIs, never the task services'. */
export const API_AUDIENCE = 'release-coordinator';

export class FakeCoordinator {
  /** Made in `start`, off the event loop (several checks may start at once). */
  key!: SigningKey;
  /** A key nobody publishes: tokens signed with it are forgeries. */
  otherKey!: SigningKey;
  readonly tasks = new Map<string, CheckTask>();
  readonly callbacks: Callback[] = [];
  readonly events: unknown[] = [];
  private readonly issued = new Set<string>();
  private server?: Server;
  url = '';

  constructor(
    private readonly opts: CoordinatorOptions,
    private readonly contract: Contract,
  ) {}

  get issuer() {
    return this.url;
  }

  /** The shape of the coordinator's tokens (`--token-shape`). */
  get shape(): TokenShape {
    return this.opts.tokenShape ?? 'aud';
  }

  /**
   * A token as the coordinator sends it (locally: aud task-services, role service; on Cognito: no aud, the task
   * services' scope and the coordinator's client id), or a variant to be refused.
   */
  token(kind: 'coordinator' | 'expired' | 'admin' | 'audience' | 'forged' | 'own'): string {
    const cognito = this.opts.tokenShape === 'cognito';
    const base: Record<string, unknown> = cognito
      ? {
          iss: this.issuer,
          sub: CHECK_COORDINATOR_CLIENT,
          client_id: CHECK_COORDINATOR_CLIENT,
          token_use: 'access',
          scope: TASK_SERVICE_SCOPE,
        }
      : {
          iss: this.issuer,
          sub: 'coordinator',
          client_id: 'coordinator',
          roles: ['service'],
          groups: [],
          aud: this.opts.audience,
        };
    switch (kind) {
      case 'expired':
        return signJwt(this.key, base, 600, Math.floor(Date.now() / 1000) - 3600);
      case 'admin':
        return signJwt(
          this.key,
          cognito
            ? {
                ...base,
                sub: 'admin',
                client_id: 'dashboard',
                scope: 'openid coordinator/admin',
                'cognito:groups': ['admin'],
              }
            : { ...base, sub: 'admin', client_id: 'admin', roles: ['admin'], aud: API_AUDIENCE },
        );
      case 'audience':
        // Another audience; on Cognito, the task services' scope held by another client.
        return signJwt(
          this.key,
          cognito ? { ...base, client_id: 'another-client' } : { ...base, aud: 'another-audience' },
        );
      case 'own':
        // A task service's own client token, for the coordinator's APIs: never the coordinator's.
        return this.serviceToken();
      case 'forged':
        return signJwt(this.otherKey, base);
      default:
        return signJwt(this.key, base);
    }
  }

  /** A token of the service's own client, for its callbacks (client credentials). */
  private serviceToken(): string {
    const id = this.opts.clientId;
    return signJwt(
      this.key,
      this.opts.tokenShape === 'cognito'
        ? { iss: this.issuer, sub: id, client_id: id, token_use: 'access', scope: 'coordinator/service' }
        : { iss: this.issuer, sub: id, client_id: id, roles: ['service'], groups: [], aud: API_AUDIENCE },
    );
  }

  /** What the service must be configured with. */
  config(secret: string): Record<string, string> {
    return serviceConfig(this.url, this.opts, secret);
  }

  async start(): Promise<void> {
    const rsa = async (): Promise<SigningKey> => ({
      kid: randomUUID(),
      privateKey: (await promisify(generateKeyPair)('rsa', { modulusLength: 2048 })).privateKey,
    });
    [this.key, this.otherKey] = await Promise.all([rsa(), rsa()]);
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.handle(req, Buffer.concat(chunks).toString('utf8'), res));
    });
    await new Promise<void>((resolve, reject) => {
      this.server?.once('error', reject);
      this.server?.listen(this.opts.port, this.opts.host, resolve);
    });
    const { port } = this.server.address() as { port: number };
    const host = this.opts.host.includes(':') ? `[${this.opts.host}]` : this.opts.host;
    this.url = `http://${host}:${port}`;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  private send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
    res.end(text);
  }

  private error(res: ServerResponse, status: number, code: string, message: string, headers = {}) {
    this.send(res, status, { error: { code, message } }, headers);
  }

  private handle(req: IncomingMessage, raw: string, res: ServerResponse) {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/.well-known/jwks.json') return this.send(res, 200, jwks(this.key));
    if (req.method === 'GET' && path === '/.well-known/openid-configuration')
      return this.send(res, 200, {
        issuer: this.issuer,
        jwks_uri: `${this.url}/.well-known/jwks.json`,
        token_endpoint: `${this.url}/oauth/token`,
      });
    if (req.method === 'POST' && path === '/oauth/token') return this.tokenEndpoint(req, raw, res);
    if (req.method === 'GET' && path === '/oauth/token/verify') return this.verifyEndpoint(req, res);
    const task = /^\/tasks\/([^/]+)\/?$/.exec(path);
    if (req.method === 'PATCH' && task) return this.report(req, decodeURIComponent(task[1]), raw, res);
    if (req.method === 'GET' && task) return this.readTask(req, decodeURIComponent(task[1]), res);
    if (req.method === 'POST' && path === '/events') {
      if (!this.bearerOk(req)) return this.error(res, 401, 'unauthorized', 'no valid service token');
      try {
        this.events.push(JSON.parse(raw));
      } catch {
        return this.error(res, 400, 'validation_error', 'the body is not JSON');
      }
      return this.send(res, 201, { created: true });
    }
    this.error(res, 404, 'not_found', `no route ${req.method} ${path}`);
  }

  /** OAuth2 client credentials (form body, or HTTP Basic): a token for the APIs' audience, role service. */
  private tokenEndpoint(req: IncomingMessage, raw: string, res: ServerResponse) {
    const form = new URLSearchParams(raw);
    let id = form.get('client_id') ?? '';
    let secret = form.get('client_secret') ?? '';
    const basic = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (basic) {
      const [u, p] = Buffer.from(basic[1], 'base64').toString('utf8').split(':');
      id = decodeURIComponent(u ?? '');
      secret = decodeURIComponent(p ?? '');
    }
    const same = (a: string, b: string) => {
      const h = (s: string) => createHash('sha256').update(s).digest();
      return timingSafeEqual(h(a), h(b));
    };
    if (form.get('grant_type') !== 'client_credentials')
      return this.send(res, 400, { error: 'unsupported_grant_type' });
    if (id !== this.opts.clientId || !same(secret, this.opts.clientSecret))
      return this.send(res, 401, { error: 'invalid_client' });
    const token = this.serviceToken();
    this.issued.add(token);
    this.send(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 3600 });
  }

  /**
   * `GET /oauth/token/verify?audience=<aud>` (the spec's `{auth_url}/oauth/token/verify`), as the local identity
   * provider serves it: 200 with the claims of a valid token of this issuer that is the coordinator's (its `aud`, or
   * on Cognito its scope and client), 401 for any other, 400 for an audience the check does not issue.
   */
  private verifyEndpoint(req: IncomingMessage, res: ServerResponse) {
    const asked = new URL(req.url ?? '/', this.url).searchParams.get('audience') ?? this.opts.audience;
    if (asked !== this.opts.audience)
      return this.send(res, 400, {
        error: {
          code: 'invalid_request',
          message: `Unknown audience ${JSON.stringify(asked)}`,
          fields: { audience: [`must be ${this.opts.audience}`] },
        },
      });
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!m) return this.error(res, 401, 'unauthorized', 'a bearer token is required');
    try {
      const claims = verifyJwt(this.key, m[1], {
        issuer: this.issuer,
        audience: [],
        nowSeconds: Math.floor(Date.now() / 1000),
      });
      const aud = claims.aud === undefined ? [] : Array.isArray(claims.aud) ? claims.aud : [claims.aud];
      const scopes = String(claims.scope ?? '').split(/\s+/);
      const ours =
        claims.aud === undefined
          ? scopes.includes(TASK_SERVICE_SCOPE) && claims.client_id === CHECK_COORDINATOR_CLIENT
          : aud.includes(asked);
      if (!ours) throw new Error('not the coordinator’s token');
      return this.send(res, 200, claims);
    } catch {
      return this.error(res, 401, 'unauthorized', `Invalid or expired token, or not one for ${asked}`);
    }
  }

  private bearerOk(req: IncomingMessage): boolean {
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    return Boolean(m && this.issued.has(m[1]));
  }

  /**
   * GET /tasks/<id> with the service's own token: a service asks about its tasks (the kit does at start and on a
   * schedule, to clean up after the tasks the coordinator gave up on). Answered from the check's record of the task.
   */
  private readTask(req: IncomingMessage, id: string, res: ServerResponse) {
    if (!this.bearerOk(req)) return this.error(res, 401, 'unauthorized', 'no valid service token');
    const task = this.tasks.get(id);
    if (!task) return this.error(res, 404, 'not_found', `Task ${id} not found`);
    this.send(res, 200, { kf_id: id, item_id: id, state: task.state, progress: task.progress });
  }

  /** PATCH /tasks/<id>: the coordinator's callback, with its 400, 401, 404 and 409 answers. */
  private report(req: IncomingMessage, id: string, raw: string, res: ServerResponse) {
    const requestId =
      typeof req.headers['x-request-id'] === 'string' ? req.headers['x-request-id'] : undefined;
    const record = (status: number, problem?: string, extra: Partial<Callback> = {}) =>
      this.callbacks.push({ taskId: id, at: Date.now(), body, requestId, status, problem, ...extra });
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      record(400, `PATCH /tasks/${id}: the body is not JSON`);
      return this.error(res, 400, 'validation_error', 'the body is not JSON');
    }
    if (!this.bearerOk(req)) {
      record(
        401,
        `PATCH /tasks/${id} without a token from ${this.opts.clientId}'s client credentials (TOKEN_URL)`,
      );
      return this.error(res, 401, 'unauthorized', 'no valid service token');
    }
    const invalid = this.contract.request('reportTask', body);
    if (invalid) {
      record(400, `PATCH /tasks/${id} ${raw}: ${invalid}`);
      return this.error(res, 400, 'validation_error', invalid);
    }
    const task = this.tasks.get(id);
    if (!task) {
      record(404, `PATCH /tasks/${id}: a task the check never sent`);
      return this.error(res, 404, 'not_found', `Task ${id} not found`);
    }
    const report = body as { state?: TaskState; progress?: number };
    if (task.probeRetry && !task.probed) {
      task.probed = raw;
      record(503, undefined, { probe: true });
      return this.error(res, 503, 'busy', 'try again after Retry-After', { 'Retry-After': '1' });
    }
    const retry = task.probed === raw;
    const to = report.state ?? task.state;
    if (task.canceledAt !== undefined && report.state !== 'canceled' && !retry) {
      // Judged by the cancel rule (work that went on after cancel). A progress report is refused too: answered 200
      // with the task's state, canceled, it would tell a kit-built service to stop (the kit stops on that answer),
      // and a service that ignores cancel would pass whenever a progress report happened to come after it.
      record(409, undefined);
      return this.error(res, 409, 'conflict', `Task ${id} is canceled`);
    }
    if (to !== task.state && !retry) {
      if (!CALLBACK_TRANSITIONS[task.state].includes(to)) {
        record(409, `PATCH /tasks/${id} ${raw}: ${task.state} may not change to ${to}`);
        return this.error(res, 409, 'conflict', `Task ${id} may not change from ${task.state} to ${to}`);
      }
      task.state = to;
    }
    if (report.progress !== undefined && !retry) task.progress = report.progress;
    record(200, undefined, { retry });
    const answer = { kf_id: id, state: task.state, progress: task.progress };
    this.send(res, 200, answer);
  }
}

export const randomSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
export const randomId = (prefix: string) => `${prefix}_CHK${randomBytes(5).toString('hex').toUpperCase()}`;
export { TASK_SERVICE_AUDIENCE };
