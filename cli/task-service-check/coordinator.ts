import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { generateSigningKey, jwks, type SigningKey, signJwt } from '#local/jwt.js';
import {
  CALLBACK_TRANSITIONS,
  TASK_SERVICE_AUDIENCE,
  type TaskState,
} from '#packages/task-service/src/contract.js';
import type { Contract } from './contract.js';

/**
 * What a task service needs from a coordinator, served by the check on a port of its own: an issuer with a JWKS (the
 * check mints the coordinator's RS256 tokens), an OAuth token endpoint for the service's client credentials, and
 * the callback routes (`PATCH /tasks/<id>`, `POST /events`). Callbacks are judged as the coordinator judges them
 * (docs/task-service-api.md, Reporting back) and recorded for the callbacks rule.
 */
export interface CoordinatorOptions {
  host: string;
  port: number;
  clientId: string;
  clientSecret: string;
  audience: string;
}

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
  opts: Pick<CoordinatorOptions, 'clientId' | 'clientSecret' | 'audience'>,
  secret: string,
): Record<string, string> {
  return {
    COORDINATOR_URL: url,
    AUTH_ISSUER: url,
    AUTH_JWKS_URI: `${url}/.well-known/jwks.json`,
    AUTH_AUDIENCE: opts.audience,
    TOKEN_URL: `${url}/oauth/token`,
    CLIENT_ID: opts.clientId,
    CLIENT_SECRET: opts.clientSecret,
    WEBHOOK_SECRET: secret,
  };
}

/** The callback token's audience: the coordinator's APIs, never the task services'. */
export const API_AUDIENCE = 'release-coordinator';

export class FakeCoordinator {
  readonly key: SigningKey = generateSigningKey();
  /** A key nobody publishes: tokens signed with it are forgeries. */
  readonly otherKey: SigningKey = generateSigningKey();
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

  /** A token as the coordinator sends it (locally: aud task-services, role service), or a variant to be refused. */
  token(kind: 'coordinator' | 'expired' | 'admin' | 'audience' | 'forged'): string {
    const base = {
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
        return signJwt(this.key, {
          ...base,
          sub: 'admin',
          client_id: 'admin',
          roles: ['admin'],
          aud: API_AUDIENCE,
        });
      case 'audience':
        return signJwt(this.key, { ...base, aud: 'another-audience' });
      case 'forged':
        return signJwt(this.otherKey, base);
      default:
        return signJwt(this.key, base);
    }
  }

  /** What the service must be configured with. */
  config(secret: string): Record<string, string> {
    return serviceConfig(this.url, this.opts, secret);
  }

  async start(): Promise<void> {
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
    const task = /^\/tasks\/([^/]+)\/?$/.exec(path);
    if (req.method === 'PATCH' && task) return this.report(req, decodeURIComponent(task[1]), raw, res);
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
    const token = signJwt(this.key, {
      iss: this.issuer,
      sub: id,
      client_id: id,
      roles: ['service'],
      groups: [],
      aud: API_AUDIENCE,
    });
    this.issued.add(token);
    this.send(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 3600 });
  }

  private bearerOk(req: IncomingMessage): boolean {
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    return Boolean(m && this.issued.has(m[1]));
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
