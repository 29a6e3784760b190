import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { JwtVerifier } from 'aws-jwt-verify';
import { SimpleJwksCache } from 'aws-jwt-verify/jwk';
import { type MemoryTaskStore, TASK_ACTIONS, type TaskService } from '#packages/task-service/src/index.js';
import {
  type Answer,
  faultAnswer,
  faultFor,
  fromKit,
  legacy,
  pendingReply,
  replyOf,
  withState,
} from './faults.js';
import type { FakeAction, FakeTaskService, FakeTaskServiceOptions, ReceivedAction } from './types.js';

/**
 * The fake's HTTP server. Every request is recorded, then answered by the kit (service.ts of the kit, with the
 * fake's work) unless a fault or a quirk of the options stands in: the faults that act on the connection itself (no
 * answer, a reset, a closed port) are why the fake has its own server rather than the kit's `serve`.
 */
export interface Front {
  url: string;
  /** Stops listening and drops every connection, unanswered ones included. */
  close(): Promise<void>;
}

type ActionBody = { action?: unknown; task_id?: unknown; release_id?: unknown; studies?: unknown };

const SIGNED = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

export async function startFront(
  fake: FakeTaskService,
  kit: TaskService,
  store: MemoryTaskStore,
  opts: FakeTaskServiceOptions,
  port = 0,
): Promise<Front> {
  const hanging = new Set<ServerResponse>();
  const flakyLeft = new Map(
    Object.entries(opts.flaky ?? {}).map(([a, f]) => [a as FakeAction, f?.times ?? 0] as const),
  );
  const checkToken = opts.quirks?.anyAudience ? audienceBlindCheck(opts) : undefined;
  let listening = true;

  /** `last`: the answer after which the port closes, which ends its connection so the next request needs one. */
  const send = (res: ServerResponse, answer: Answer, last = false) => {
    const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
    res.writeHead(answer.status, {
      'Content-Type': 'application/json',
      ...answer.headers,
      'Content-Length': String(Buffer.byteLength(text)),
      ...(last ? { Connection: 'close' } : {}),
    });
    res.end(text);
  };

  const toKit = async (req: IncomingMessage, body: string) => {
    const headers: Record<string, string | undefined> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    return fromKit(
      await kit.handle({ method: req.method ?? 'GET', path: (req.url ?? '/').split('?')[0], headers, body }),
    );
  };

  /** The task as stored, answered as get_status would be, without asking the kit. */
  const asStatus = async (taskId: string): Promise<Answer> => {
    const task = await store.get(taskId);
    return task
      ? { status: 200, body: replyOf(fake.name, task) }
      : { status: 404, body: { message: `task ${taskId} not found` } };
  };

  const respond = async (req: IncomingMessage, res: ServerResponse, body: string) => {
    const path = (req.url ?? '/').split('?')[0];
    fake.requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body, at: Date.now() });
    if (checkToken) {
      const refused = await checkToken(req.headers.authorization);
      if (refused) return send(res, refused);
    }
    if (req.method === 'GET' && path === '/status') {
      const fault = fake.status;
      if (fault === 'hang') return void hanging.add(res);
      if (fault === 'reset') return void req.socket.destroy();
      return send(res, faultAnswer(fault) ?? (await toKit(req, body)));
    }
    const parsed = parseAction(req, path, body);
    if (!parsed) return send(res, await toKit(req, body));
    const { received } = parsed;
    if (!received) {
      // An action the API does not have.
      if (!opts.quirks?.unknownActionAsStatus) return send(res, await toKit(req, body));
      return send(res, await asStatus(parsed.taskId));
    }
    fake.received.push(received);
    const { action, taskId, releaseId } = received;
    const last = opts.refuseAfter === action;
    const delay = opts.delays?.[action] ?? 0;
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));

    const fault = faultFor(fake, flakyLeft, opts, action, taskId);
    if (fault === 'hang') return void hanging.add(res);
    if (fault === 'reset') return void req.socket.destroy();
    let answer = faultAnswer(fault);
    if (!answer && typeof fault === 'object' && 'state' in fault)
      answer = withState(fault.act === false ? await asStatus(taskId) : await toKit(req, body), fault.state);
    answer ??= await toKit(req, body);
    if (answer.status === 404 && opts.quirks?.acceptUnknownTasks)
      answer = { status: 200, body: pendingReply(fake.name, taskId, releaseId) };
    if (opts.legacySpelling) answer = legacy(answer);
    if (last) res.once('finish', () => void close());
    send(res, answer, last);
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      respond(req, res, Buffer.concat(chunks).toString('utf8')).catch((err: unknown) => {
        opts.log?.(`fake task service: ${(err as Error)?.stack ?? String(err)}`);
        if (!res.headersSent) send(res, { status: 500, body: { message: String(err) } });
      });
    });
  });

  const close = async () => {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((r) => server.close(() => r()));
    for (const res of hanging) res.destroy();
    hanging.clear();
    server.closeAllConnections();
    await closed;
  };

  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((r) => server.listen(port, host === '127.0.0.1' ? host : '0.0.0.0', r));
  return { url: `http://${host}:${(server.address() as AddressInfo).port}`, close };
}

/**
 * A POST /tasks body that names a task and a release: `received` when its action is one of the five, as recorded.
 * Undefined for anything else, which the kit answers (400, 404, 405).
 */
function parseAction(
  req: IncomingMessage,
  path: string,
  raw: string,
): { taskId: string; received?: ReceivedAction } | undefined {
  if (req.method !== 'POST' || path.replace(/\/+$/, '') !== '/tasks') return undefined;
  let body: ActionBody;
  try {
    body = JSON.parse(raw) as ActionBody;
  } catch {
    return undefined;
  }
  if (typeof body?.task_id !== 'string' || typeof body.release_id !== 'string') return undefined;
  if (typeof body.action !== 'string') return undefined;
  if (!(TASK_ACTIONS as readonly string[]).includes(body.action)) return { taskId: body.task_id };
  return {
    taskId: body.task_id,
    received: {
      action: body.action as FakeAction,
      taskId: body.task_id,
      releaseId: body.release_id,
      studies: body.studies,
      authorization: req.headers.authorization,
      requestId: req.headers['x-request-id'] as string | undefined,
      raw,
      webhook: Object.fromEntries(
        SIGNED.flatMap((h) => (typeof req.headers[h] === 'string' ? [[h, req.headers[h]]] : [])),
      ),
      at: Date.now(),
    },
  };
}

/** The anyAudience quirk: the JWT is verified against the issuer's keys, its audience never looked at. */
function audienceBlindCheck(opts: FakeTaskServiceOptions) {
  const auth = opts.auth;
  if (auth?.mode !== 'jwks') throw new Error('the anyAudience quirk needs auth in jwks mode');
  const verifier = JwtVerifier.create(
    { issuer: auth.issuer, audience: null, jwksUri: auth.jwksUri },
    {
      jwksCache: new SimpleJwksCache({
        fetcher: { fetch: async (uri: string) => (await fetch(uri)).arrayBuffer() },
      }),
    },
  );
  return async (authorization: string | undefined): Promise<Answer | undefined> => {
    const m = /^Bearer\s+(\S+)$/i.exec(authorization ?? '');
    try {
      await verifier.verify(m?.[1] ?? '');
      return undefined;
    } catch {
      return { status: 401, body: { message: 'invalid token', code: 'unauthorized' } };
    }
  };
}
