import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake task service over real HTTP (spec: Task service API) for whole-release tests and the benchmark. It keeps
 * its tasks, fakes staging and publishing with configurable durations, reports through PATCH /tasks/<id> to the
 * coordinator like a real service, and can misbehave at any action:
 *
 *   ok          normal answer
 *   {status}    that HTTP status instead (with a Retry-After header when `retryAfter` is given)
 *   hang        never answers (past any action timeout)
 *   not_json    200 with a body that is not JSON
 *   {state}     200 with that (wrong) state
 *   reset       destroys the connection
 *
 * A refused connection is a closed port: `refuseAfter` stops listening right after the named action was answered,
 * so the next action finds nothing listening; `close()` does the same at a moment the test chooses.
 */
export type FakeAction = 'initialize' | 'start' | 'get_status' | 'publish' | 'cancel';
export type Misbehaviour =
  | 'ok'
  | 'hang'
  | 'not_json'
  | 'reset'
  | { status: number; retryAfter?: string }
  | { state: string };

export interface FakeTaskServiceOptions {
  name?: string;
  /** How each action is answered (default: ok). */
  actions?: Partial<Record<FakeAction, Misbehaviour>>;
  /** The first `times` requests of an action misbehave as `how`; the later ones are answered as `actions` says. */
  flaky?: Partial<Record<FakeAction, { times: number; how: Misbehaviour }>>;
  /** ms from start to staged; 0 = start answers `staged` at once; Infinity = never. Default 0. */
  stageMs?: number;
  /** ms from publish to published; 0 = publish answers `published` at once; Infinity = never. Default 0. */
  publishMs?: number;
  /** Report staged/published (or failed) with PATCH /tasks/<id> when the work ends. Default true. */
  callbacks?: boolean;
  /** The work fails instead of staging: reported with PATCH state failed after stageMs. */
  failStaging?: boolean;
  /** Stop listening after answering this action (the next action gets "connection refused"). */
  refuseAfter?: FakeAction;
  /** Spell replies like older services: task_id instead of kf_id, "initialized", progress "NN%". */
  legacySpelling?: boolean;
  /** GET /status answers this status (default 200). */
  statusCode?: number;
  /** Multiplies the Retry-After pause before a report is sent again (tests shorten it; default 1). */
  retryAfterScale?: number;
  /** Answer these actions only after this many ms (still within the action timeout, say). */
  delays?: Partial<Record<FakeAction, number>>;
  /**
   * The host the coordinator calls this service at (default 127.0.0.1). Any other makes it listen on every
   * interface, e.g. for a coordinator in a container that reaches this machine as host.docker.internal.
   */
  host?: string;
}

export interface ReceivedAction {
  action: FakeAction;
  taskId: string;
  releaseId: string;
  studies: unknown;
  authorization: string | undefined;
  /** The X-Request-Id the coordinator sent (its correlation id). */
  requestId: string | undefined;
  /** The body exactly as received, and the Standard Webhooks headers the coordinator signed it with. */
  raw: string;
  webhook: { 'webhook-id'?: string; 'webhook-timestamp'?: string; 'webhook-signature'?: string };
  at: number;
}

interface FakeTask {
  releaseId: string;
  state: string;
  progress: number;
  timer?: NodeJS.Timeout;
}

export interface FakeTaskService {
  name: string;
  url: string;
  options: FakeTaskServiceOptions;
  received: ReceivedAction[];
  /** Where callbacks go and with which bearer token. */
  coordinator?: { baseUrl: string; token: () => string };
  /**
   * Every report sent (PATCH /tasks/<id>): the coordinator's last status (0: no answer), how long it took from the
   * first attempt to that answer, how many attempts it took (a 409 or 503 with Retry-After is sent again after that
   * many seconds, as docs/task-service-api.md asks), and the body of a refusal.
   */
  callbacks: {
    taskId: string;
    state: string;
    status: number;
    ms: number;
    attempts: number;
    error?: string;
  }[];
  tasks: Map<string, FakeTask>;
  statusCode: number;
  /** Actions received for a task, in order. */
  actionsFor(taskId: string): FakeAction[];
  /** Stops listening (connections are refused from now on). */
  close(): Promise<void>;
  /** Stops everything, timers included. */
  stop(): Promise<void>;
}

const ACTIONS: readonly FakeAction[] = ['initialize', 'start', 'get_status', 'publish', 'cancel'];
/** How many times a report is sent when the coordinator keeps answering 409 / 503 with Retry-After. */
const MAX_REPORT_ATTEMPTS = 10;

export async function startFakeTaskService(options: FakeTaskServiceOptions = {}): Promise<FakeTaskService> {
  const name = options.name ?? 'fake task service';
  const stageMs = options.stageMs ?? 0;
  const publishMs = options.publishMs ?? 0;
  const callbacks = options.callbacks ?? true;
  const tasks = new Map<string, FakeTask>();
  const hanging = new Set<ServerResponse>();
  let listening = true;
  let stopped = false;

  const svc: FakeTaskService = {
    name,
    url: '',
    options,
    received: [],
    callbacks: [],
    tasks,
    statusCode: options.statusCode ?? 200,
    actionsFor: (taskId) => svc.received.filter((r) => r.taskId === taskId).map((r) => r.action),
    close: async () => {},
    stop: async () => {},
  };

  const report = async (taskId: string, state: string, progress: number) => {
    if (!callbacks || !svc.coordinator || stopped) return;
    const t0 = performance.now();
    for (let attempts = 1; ; attempts++) {
      try {
        const res = await fetch(`${svc.coordinator.baseUrl}/tasks/${taskId}`, {
          method: 'PATCH',
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${svc.coordinator.token()}` },
          body: JSON.stringify({ state, progress }),
        });
        const text = await res.text();
        // A conflict or an overload that passes with time says when to try again.
        const retryAfter = Number(res.headers.get('retry-after') ?? Number.NaN);
        if (
          (res.status === 409 || res.status === 503) &&
          retryAfter >= 0 &&
          attempts < MAX_REPORT_ATTEMPTS &&
          !stopped
        ) {
          await new Promise((r) => setTimeout(r, retryAfter * 1000 * (options.retryAfterScale ?? 1)));
          continue;
        }
        svc.callbacks.push({
          taskId,
          state,
          status: res.status,
          ms: performance.now() - t0,
          attempts,
          ...(res.status === 200 ? {} : { error: text.slice(0, 300) }),
        });
      } catch {
        svc.callbacks.push({ taskId, state, status: 0, ms: performance.now() - t0, attempts });
      }
      return;
    }
  };

  const later = (task: FakeTask, ms: number, fn: () => void) => {
    if (!Number.isFinite(ms)) return;
    task.timer = setTimeout(fn, ms);
  };

  const reply = (task: FakeTask | undefined, taskId: string, releaseId: string) => {
    const legacy = options.legacySpelling;
    const state = task?.state ?? 'pending';
    return {
      name,
      ...(legacy ? { task_id: taskId } : { kf_id: taskId }),
      release_id: releaseId,
      state: legacy && state === 'pending' ? 'initialized' : state,
      progress: legacy ? `${task?.progress ?? 0}%` : (task?.progress ?? 0),
      date_submitted: new Date().toISOString().replace('Z', '+00:00'),
    };
  };

  const handleAction = (action: FakeAction, taskId: string, releaseId: string, res: ServerResponse) => {
    let task = tasks.get(taskId);
    if (action !== 'initialize' && !task) return send(res, 404, { message: `task '${taskId}' not found` });
    switch (action) {
      case 'initialize':
        task ??= { releaseId, state: 'pending', progress: 0 };
        tasks.set(taskId, task);
        break;
      case 'start': {
        const t = task as FakeTask;
        // Sent again (a step retried after its write failed): the work already runs, as the spec allows.
        if (t.state === 'running' || t.state === 'staged') break;
        if (t.state !== 'pending') return send(res, 503, { message: `cannot start a ${t.state} task` });
        if (stageMs === 0 && !options.failStaging) {
          t.state = 'staged';
          t.progress = 100;
        } else {
          t.state = 'running';
          later(t, stageMs, () => {
            if (t.state !== 'running') return;
            if (options.failStaging) {
              t.state = 'failed';
              void report(taskId, 'failed', t.progress);
            } else {
              t.state = 'staged';
              t.progress = 100;
              void report(taskId, 'staged', 100);
            }
          });
        }
        break;
      }
      case 'get_status': {
        const t = task as FakeTask;
        if (t.state === 'running') t.progress = Math.min(99, t.progress + 10);
        break;
      }
      case 'publish': {
        const t = task as FakeTask;
        // Sent again (a step retried after its write failed): a task already publishing (or published) says so.
        if (t.state === 'publishing' || t.state === 'published') break;
        if (t.state !== 'staged') return send(res, 503, { message: `cannot publish a ${t.state} task` });
        if (publishMs === 0) {
          t.state = 'published';
          t.progress = 100;
        } else {
          t.state = 'publishing';
          t.progress = 0;
          later(t, publishMs, () => {
            if (t.state !== 'publishing') return;
            t.state = 'published';
            t.progress = 100;
            void report(taskId, 'published', 100);
          });
        }
        break;
      }
      case 'cancel': {
        const t = task as FakeTask;
        clearTimeout(t.timer);
        t.state = 'canceled';
        break;
      }
    }
    send(res, 200, reply(tasks.get(taskId), taskId, releaseId));
  };

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    // The last answer before refusing closes its connection, so the next request needs a new one (and is refused).
    const closing = options.refuseAfter !== undefined && res.req?.headers['x-fake-last'] === '1';
    res.writeHead(status, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(text),
      ...(closing ? { Connection: 'close' } : {}),
      ...headers,
    });
    res.end(text);
  };

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method === 'GET' && path === '/status') {
        return send(res, svc.statusCode, {
          name,
          message: svc.statusCode === 200 ? 'ready' : 'unavailable',
          version: '1.0.0',
        });
      }
      if (req.method !== 'POST' || path !== '/tasks') return send(res, 404, { message: 'not found' });
      let body: any;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return send(res, 400, { message: 'body is not JSON' });
      }
      const action = body?.action as FakeAction;
      if (
        !ACTIONS.includes(action) ||
        typeof body.task_id !== 'string' ||
        typeof body.release_id !== 'string'
      )
        return send(res, 400, { message: 'action, task_id and release_id are required' });
      svc.received.push({
        action,
        taskId: body.task_id,
        releaseId: body.release_id,
        studies: body.studies,
        authorization: req.headers.authorization,
        requestId: req.headers['x-request-id'] as string | undefined,
        raw: Buffer.concat(chunks).toString('utf8'),
        webhook: Object.fromEntries(
          ['webhook-id', 'webhook-timestamp', 'webhook-signature'].flatMap((h) =>
            typeof req.headers[h] === 'string' ? [[h, req.headers[h]]] : [],
          ),
        ),
        at: Date.now(),
      });
      if (options.refuseAfter === action) req.headers['x-fake-last'] = '1';
      const delay = options.delays?.[action] ?? 0;
      if (delay > 0) setTimeout(() => respond(action, body, req, res), delay);
      else respond(action, body, req, res);
    });
  });

  const flakyLeft = new Map(Object.entries(options.flaky ?? {}).map(([a, f]) => [a, f?.times ?? 0]));
  const respond = (action: FakeAction, body: any, req: IncomingMessage, res: ServerResponse) => {
    const left = flakyLeft.get(action) ?? 0;
    if (left > 0) flakyLeft.set(action, left - 1);
    const how = (left > 0 ? options.flaky?.[action]?.how : undefined) ?? options.actions?.[action] ?? 'ok';
    if (how === 'hang') {
      hanging.add(res);
      return;
    }
    if (how === 'reset') {
      req.socket.destroy();
      return;
    }
    if (how === 'not_json') return send(res, 200, '<html>not json</html>');
    if (typeof how === 'object' && 'status' in how)
      return send(
        res,
        how.status,
        { message: 'rejected' },
        how.retryAfter === undefined ? {} : { 'Retry-After': how.retryAfter },
      );
    if (typeof how === 'object' && 'state' in how) {
      if (action === 'initialize')
        tasks.set(body.task_id, { releaseId: body.release_id, state: 'pending', progress: 0 });
      return send(res, 200, {
        ...reply(tasks.get(body.task_id), body.task_id, body.release_id),
        state: how.state,
      });
    }
    handleAction(action, body.task_id, body.release_id, res);
    if (options.refuseAfter === action) res.once('finish', () => void svc.close());
  };

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((r) => server.listen(0, host === '127.0.0.1' ? host : '0.0.0.0', r));
  svc.url = `http://${host}:${(server.address() as AddressInfo).port}`;
  svc.close = async () => {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((r) => server.close(() => r()));
    for (const res of hanging) res.destroy();
    hanging.clear();
    server.closeAllConnections();
    await closed;
  };
  svc.stop = async () => {
    stopped = true;
    for (const t of tasks.values()) clearTimeout(t.timer);
    await svc.close();
  };
  return svc;
}
