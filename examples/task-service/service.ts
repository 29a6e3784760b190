import { readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { JwtVerifier } from 'aws-jwt-verify';
import { SimpleJwksCache } from 'aws-jwt-verify/jwk';
import { Webhook } from 'standardwebhooks';

/**
 * The reference task service: what a task service owes the coordinator (spec: Task service API), in one file.
 *
 *   GET  /status   200 {name, message, version} when ready; 503 when it is not
 *   POST /tasks    {action, task_id, release_id, studies?} with action initialize | start | get_status | publish |
 *                  cancel; answers {name, kf_id, task_id, release_id, state, progress, date_submitted}
 *                  400 invalid input, 404 unknown task, 503 action rejected (e.g. publish before staged)
 *
 * Every request must carry the coordinator's bearer token, checked with aws-jwt-verify against the identity
 * provider's JWKS (or, with authMode "verify", by asking {authUrl}/oauth/token/verify?audience=…). With a signing
 * secret, every POST /tasks must also carry the coordinator's Standard Webhooks signature for this service (the
 * secret it got at registration), made less than 5 minutes ago, with a webhook-id not seen before; GET /status never
 * needs one (the coordinator calls it before the service has a secret). The work itself is faked:
 * staging and publishing take a configurable time, report progress, and end with a PATCH /tasks/<id> to the
 * coordinator (the coordinator also polls with get_status, so callbacks are an optimisation, not a must).
 * Failures can be injected at any action.
 */
export type Action = 'initialize' | 'start' | 'get_status' | 'publish' | 'cancel';
const ACTIONS: readonly Action[] = ['initialize', 'start', 'get_status', 'publish', 'cancel'];

export interface TaskServiceOptions {
  name: string;
  version?: string;
  /** Where PATCH /tasks/<id> goes; without it the service only answers polls. */
  coordinatorUrl?: string;
  /** A bearer token for the callbacks (service role); called for every callback so it can be refreshed. */
  callbackToken?: () => Promise<string | null>;
  /** How the coordinator's token is checked. */
  auth:
    | { mode: 'jwks'; issuer: string; audience: string[]; jwksUri?: string; requiredRole?: string }
    | { mode: 'verify'; authUrl: string; audience: string[] }
    | { mode: 'none' };
  /**
   * The service's signing secrets (`whsec_…`, from its registration or a rotation), asked for each action. Unset:
   * signatures are not checked (the service relies on the bearer token alone). Set but answering none (the secret
   * file is not written yet): every action is refused (401) until there is one.
   */
  signingSecrets?: () => string[];
  stageSeconds: number;
  publishSeconds: number;
  /** Progress reports (PATCH with the running state) during staging. */
  progressSteps: number;
  /** Actions answered 503 (failure injection); "staging" / "publishing" make the work itself fail. */
  failAt: readonly (Action | 'staging' | 'publishing')[];
  log?: (line: string) => void;
}

interface Task {
  id: string;
  releaseId: string;
  studies: unknown;
  state: 'pending' | 'running' | 'staged' | 'publishing' | 'published' | 'canceled' | 'failed';
  progress: number;
  submitted: string;
  timers: NodeJS.Timeout[];
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function checker(auth: TaskServiceOptions['auth']): (header: string | undefined) => Promise<void> {
  if (auth.mode === 'none') return async () => {};
  const bearer = (header: string | undefined) => {
    const m = /^Bearer\s+(\S+)$/i.exec(header ?? '');
    if (!m) throw new HttpError(401, 'a bearer token is required');
    return m[1];
  };
  if (auth.mode === 'verify') {
    return async (header) => {
      const token = bearer(header);
      // The audience is named: the identity provider then refuses a token issued for anything else (an API's).
      for (const audience of auth.audience) {
        const url = `${auth.authUrl.replace(/\/$/, '')}/oauth/token/verify?audience=${encodeURIComponent(audience)}`;
        const res = await fetch(url, {
          headers: { Authorization: `Bearer ${token}` },
          signal: AbortSignal.timeout(5000),
        }).catch(() => null);
        await res?.arrayBuffer();
        if (res?.status === 200) return;
      }
      throw new HttpError(401, 'the token did not verify');
    };
  }
  const verifier = JwtVerifier.create(
    {
      issuer: auth.issuer,
      audience: auth.audience,
      jwksUri: auth.jwksUri ?? `${auth.issuer.replace(/\/$/, '')}/.well-known/jwks.json`,
    },
    {
      // The platform fetch, so an http:// identity provider (the local one) works too.
      jwksCache: new SimpleJwksCache({
        fetcher: {
          fetch: async (uri: string) =>
            (await fetch(uri, { signal: AbortSignal.timeout(5000) })).arrayBuffer(),
        },
      }),
    },
  );
  return async (header) => {
    const token = bearer(header);
    let payload: Record<string, unknown>;
    try {
      payload = (await verifier.verify(token)) as Record<string, unknown>;
    } catch {
      throw new HttpError(401, 'invalid or expired token');
    }
    if (auth.requiredRole) {
      const roles = [payload.roles, payload['cognito:groups'], payload.scope]
        .flatMap((v) => (Array.isArray(v) ? v : typeof v === 'string' ? v.split(/[\s,]+/) : []))
        .map((r) => String(r).split('/').pop());
      if (!roles.includes(auth.requiredRole))
        throw new HttpError(403, `the token lacks the ${auth.requiredRole} role`);
    }
  };
}

/** How long a signature is good for: Standard Webhooks' tolerance, which the standardwebhooks package applies. */
export const SIGNATURE_TOLERANCE_SECONDS = 5 * 60;

/**
 * Checks an action's Standard Webhooks signature (standardwebhooks: HMAC-SHA256 over `<webhook-id>.<timestamp>.<body>`,
 * timestamp within 5 minutes either way). A signature made with another service's secret does not verify here:
 * the secret is this service's alone. A webhook-id seen in the last 5 minutes is a replay and is refused too (older
 * ones fail the timestamp check anyway), so a captured request cannot be played again.
 */
function signatureChecker(secrets: (() => string[]) | undefined) {
  if (!secrets) return () => {};
  const seen = new Map<string, number>();
  return (raw: string, headers: IncomingMessage['headers']) => {
    const current = secrets();
    if (current.length === 0)
      throw new HttpError(401, 'no signing secret configured yet: actions are refused');
    const h = (name: string) => (typeof headers[name] === 'string' ? (headers[name] as string) : '');
    const signed = {
      'webhook-id': h('webhook-id'),
      'webhook-timestamp': h('webhook-timestamp'),
      'webhook-signature': h('webhook-signature'),
    };
    let why = 'missing signature headers';
    let ok = false;
    for (const secret of current) {
      try {
        new Webhook(secret).verify(raw, signed);
        ok = true;
        break;
      } catch (err) {
        why = err instanceof Error ? err.message : String(err);
      }
    }
    if (!ok) throw new HttpError(401, `the signature does not verify: ${why}`);
    const now = Date.now();
    for (const [id, until] of seen) if (until <= now) seen.delete(id);
    if (seen.has(signed['webhook-id']))
      throw new HttpError(401, 'the signature does not verify: replayed webhook-id');
    seen.set(signed['webhook-id'], now + 2 * SIGNATURE_TOLERANCE_SECONDS * 1000);
  };
}

/**
 * The signing secret from a file, read again whenever the file changes, so the secret the coordinator answers at
 * registration (or rotation) takes effect without a restart. The file holds the `whsec_…` value, or the JSON answer
 * of `POST /task-services` / `rotate-secret` (its `secret` field). A missing or empty file gives no secret.
 */
export function secretFile(path: string): () => string[] {
  let cache: { mtimeMs: number; size: number; secrets: string[] } | undefined;
  return () => {
    let stat: { mtimeMs: number; size: number };
    try {
      stat = statSync(path);
    } catch {
      cache = undefined;
      return [];
    }
    if (cache && cache.mtimeMs === stat.mtimeMs && cache.size === stat.size) return cache.secrets;
    const text = readFileSync(path, 'utf8').trim();
    let secrets: string[] = [];
    if (text.startsWith('{')) {
      try {
        const secret = (JSON.parse(text) as { secret?: unknown }).secret;
        if (typeof secret === 'string') secrets = [secret];
      } catch {
        secrets = [];
      }
    } else {
      secrets = text.split(/\s+/).filter(Boolean);
    }
    cache = { mtimeMs: stat.mtimeMs, size: stat.size, secrets };
    return secrets;
  };
}

export interface RunningTaskService {
  url: string;
  server: Server;
  tasks: Map<string, Task>;
  /** Set to false to make GET /status answer 503. */
  ready: boolean;
  stop(): Promise<void>;
}

export async function startTaskService(
  opts: TaskServiceOptions,
  listen: { port: number; host: string },
): Promise<RunningTaskService> {
  const tasks = new Map<string, Task>();
  const authorize = checker(opts.auth);
  const checkSignature = signatureChecker(opts.signingSecrets);
  const log = opts.log ?? (() => {});
  const failAt = new Set(opts.failAt);
  const service: RunningTaskService = {
    url: '',
    server: undefined as unknown as Server,
    tasks,
    ready: true,
    stop: async () => {},
  };

  /** The coordinator's correlation id of each task's work (X-Request-Id), logged and sent back on its callbacks. */
  const requestIds = new Map<string, string>();

  const report = async (task: Task) => {
    if (!opts.coordinatorUrl) return;
    const requestId = requestIds.get(task.id);
    const body = JSON.stringify({ state: task.state, progress: task.progress });
    // A 409 or 503 with Retry-After passes with time (docs/task-service-api.md): the same report is sent again.
    for (let attempt = 1; attempt <= 5; attempt++) {
      try {
        const token = await opts.callbackToken?.();
        const res = await fetch(`${opts.coordinatorUrl.replace(/\/$/, '')}/tasks/${task.id}`, {
          method: 'PATCH',
          headers: {
            'Content-Type': 'application/json',
            ...(token ? { Authorization: `Bearer ${token}` } : {}),
            ...(requestId ? { 'X-Request-Id': requestId } : {}),
          },
          body,
          signal: AbortSignal.timeout(10_000),
        });
        log(`PATCH /tasks/${task.id} ${task.state} ${task.progress}% -> ${res.status}`);
        await res.arrayBuffer();
        const retryAfter = Number(res.headers.get('retry-after') ?? Number.NaN);
        if (!((res.status === 409 || res.status === 503) && retryAfter >= 0)) return;
        await new Promise((r) => setTimeout(r, retryAfter * 1000));
      } catch (err) {
        // The coordinator polls too: a lost callback only costs time.
        log(`PATCH /tasks/${task.id} failed: ${String(err)}`);
        return;
      }
    }
  };

  /** Fakes a piece of work: progress reports along the way, then the end state. */
  const work = (task: Task, seconds: number, during: Task['state'], done: Task['state'], fails: boolean) => {
    const steps = Math.max(1, opts.progressSteps);
    const stepMs = (seconds * 1000) / steps;
    for (let i = 1; i <= steps; i++) {
      task.timers.push(
        setTimeout(() => {
          if (task.state !== during) return;
          if (i < steps) {
            task.progress = Math.round((i / steps) * 100);
            void report(task);
            return;
          }
          task.state = fails ? 'failed' : done;
          task.progress = fails ? task.progress : 100;
          void report(task);
        }, stepMs * i),
      );
    }
  };

  const reply = (task: Task) => ({
    name: opts.name,
    kf_id: task.id,
    task_id: task.id,
    release_id: task.releaseId,
    state: task.state,
    progress: task.progress,
    date_submitted: task.submitted,
  });

  const act = (action: Action, body: Record<string, unknown>) => {
    const taskId = body.task_id as string;
    if (failAt.has(action)) throw new HttpError(503, `${action} rejected (failure injected)`);
    let task = tasks.get(taskId);
    if (action === 'initialize') {
      task ??= {
        id: taskId,
        releaseId: body.release_id as string,
        studies: body.studies ?? [],
        state: 'pending',
        progress: 0,
        submitted: new Date().toISOString().replace('Z', '+00:00'),
        timers: [],
      };
      if (task.state !== 'pending') throw new HttpError(503, `task ${taskId} is ${task.state}`);
      tasks.set(taskId, task);
      return reply(task);
    }
    if (!task) throw new HttpError(404, `task '${taskId}' not found`);
    switch (action) {
      case 'start':
        if (task.state !== 'pending') throw new HttpError(503, `cannot start a ${task.state} task`);
        task.state = 'running';
        work(task, opts.stageSeconds, 'running', 'staged', failAt.has('staging'));
        break;
      case 'publish':
        if (task.state !== 'staged') throw new HttpError(503, `cannot publish a ${task.state} task`);
        task.state = 'publishing';
        task.progress = 0;
        work(task, opts.publishSeconds, 'publishing', 'published', failAt.has('publishing'));
        break;
      case 'cancel':
        for (const t of task.timers) clearTimeout(t);
        if (task.state !== 'published') task.state = 'canceled';
        break;
      default: // get_status
        break;
    }
    return reply(task);
  };

  const send = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const path = (req.url ?? '/').split('?')[0].replace(/\/+$/, '') || '/';
      try {
        await authorize(req.headers.authorization);
        if (path === '/status' && req.method === 'GET') {
          if (!service.ready)
            return send(res, 503, { name: opts.name, message: 'not ready', version: opts.version });
          return send(res, 200, {
            name: opts.name,
            message: 'ready for work',
            version: opts.version ?? '1.0.0',
          });
        }
        if (path !== '/tasks' || req.method !== 'POST')
          throw new HttpError(404, `no route ${req.method} ${path}`);
        const raw = Buffer.concat(chunks).toString('utf8');
        checkSignature(raw, req.headers);
        let body: Record<string, unknown>;
        try {
          body = JSON.parse(raw);
        } catch {
          throw new HttpError(400, 'the body is not JSON');
        }
        const missing = ['action', 'task_id', 'release_id'].filter((k) => typeof body?.[k] !== 'string');
        if (missing.length) throw new HttpError(400, `missing or invalid: ${missing.join(', ')}`);
        if (!ACTIONS.includes(body.action as Action))
          throw new HttpError(400, `unknown action ${String(body.action)}`);
        const requestId = req.headers['x-request-id'];
        if (typeof requestId === 'string') requestIds.set(body.task_id as string, requestId);
        const out = act(body.action as Action, body);
        log(`${body.action} ${body.task_id} -> ${out.state}${requestId ? ` [${requestId}]` : ''}`);
        send(res, 200, out);
      } catch (err) {
        const status = err instanceof HttpError ? err.status : 500;
        send(res, status, { message: err instanceof Error ? err.message : 'error' });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(listen.port, listen.host, resolve));
  const address = server.address() as { port: number };
  service.server = server;
  service.url = `http://${listen.host}:${address.port}`;
  service.stop = async () => {
    for (const t of tasks.values()) for (const timer of t.timers) clearTimeout(timer);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return service;
}

/** Client credentials for the callbacks, cached until shortly before the token expires. */
export function clientCredentials(tokenUrl: string, clientId: string, clientSecret: string) {
  let cached: { token: string; until: number } | undefined;
  return async (): Promise<string | null> => {
    if (cached && Date.now() < cached.until) return cached.token;
    const res = await fetch(tokenUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: clientId,
        client_secret: clientSecret,
      }),
      signal: AbortSignal.timeout(10_000),
    });
    if (res.status !== 200) throw new Error(`token endpoint answered ${res.status}`);
    const body = (await res.json()) as { access_token: string; expires_in?: number };
    cached = {
      token: body.access_token,
      until: Date.now() + Math.max(0, (body.expires_in ?? 300) - 30) * 1000,
    };
    return cached.token;
  };
}
