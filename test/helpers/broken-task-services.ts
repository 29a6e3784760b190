import { createServer, type IncomingMessage, type Server } from 'node:http';
import { JwtVerifier } from 'aws-jwt-verify';
import { SimpleJwksCache } from 'aws-jwt-verify/jwk';
import { Webhook } from 'standardwebhooks';
import { clientCredentials, startTaskService } from '#examples/task-service/service.js';

/**
 * Task services for the conformance check's tests: the reference service (examples/task-service, on the kit), and
 * the same service behind a small front that gives it exactly one defect. Each defect breaks one rule of
 * `drc task-service check` and nothing else, so the check must fail that rule alone. `none` is the front with no
 * defect: it shows the front itself changes nothing.
 */
export const DEFECTS = {
  none: 'no defect',
  status: 'GET /status answers without a name',
  staging: 'start answers pending although the work has begun',
  publishing: 'publish answers staged although publishing has begun',
  cancel: 'cancel answers canceled but the work goes on',
  repeats: 'a start sent again is refused (503)',
  'unknown-task': 'an action for a task it never initialized answers 200',
  'unknown-action': 'an unknown action is taken for get_status',
  tokens: 'the token is verified without its audience',
  signatures: 'signatures are verified, but a replayed webhook-id is not refused',
  callbacks: 'callbacks carry a field the contract does not allow',
} as const;
export type Defect = keyof typeof DEFECTS;

/** What the check told the service to use (its printed settings). */
export type CheckConfig = Record<string, string>;

interface Req {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}
interface Res {
  status: number;
  body: string;
}
type Forward = (req: Req) => Promise<Res>;

const json = (status: number, body: unknown): Res => ({ status, body: JSON.stringify(body) });

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as { port: number }).port}`),
    ),
  );
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/** An HTTP front: each request goes through `handle`, which may forward it to `target`. */
async function front(target: string, handle: (req: Req, forward: Forward) => Promise<Res>) {
  const forward: Forward = async (req) => {
    const headers = { ...req.headers };
    delete headers['content-length'];
    delete headers.host;
    delete headers.connection;
    const res = await fetch(`${target}${req.path}`, {
      method: req.method,
      headers,
      body: req.method === 'GET' ? undefined : req.body,
    });
    return { status: res.status, body: await res.text() };
  };
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    const headers = Object.fromEntries(
      Object.entries(req.headers).flatMap(([k, v]) => (typeof v === 'string' ? [[k, v]] : [])),
    );
    const out = await handle(
      { method: req.method ?? 'GET', path: req.url ?? '/', headers, body },
      forward,
    ).catch((err: unknown) => json(500, { message: String(err) }));
    res.writeHead(out.status, { 'Content-Type': 'application/json' });
    res.end(out.body);
  });
  const url = await listen(server);
  return {
    url,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** The action of a POST /tasks body, if it is one. */
const actionOf = (req: Req): { action?: string; task_id?: string; release_id?: string } | undefined => {
  if (req.method !== 'POST' || !req.path.startsWith('/tasks')) return undefined;
  try {
    return JSON.parse(req.body);
  } catch {
    return undefined;
  }
};

export interface StartedService {
  url: string;
  stop(): Promise<void>;
}

/**
 * The reference service configured as the check said, with `defect`. Work is short (0.5 s to stage, 0.5 s to
 * publish, one progress report each) so that a whole check takes seconds.
 */
export async function startServiceWith(
  defect: Defect | 'reference',
  config: CheckConfig,
): Promise<StartedService> {
  const secret = config.WEBHOOK_SECRET;
  /** The front re-signs a request whose body it changed, as the coordinator would have signed it. */
  const resign = (req: Req, body: string): Req => {
    const id = `msg_front${Date.now()}${Math.random().toString(36).slice(2)}`;
    const at = new Date();
    return {
      ...req,
      body,
      headers: {
        ...req.headers,
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign(id, at, body),
      },
    };
  };
  const stops: (() => Promise<void>)[] = [];
  let coordinatorUrl = config.COORDINATOR_URL;
  if (defect === 'callbacks') {
    // Between the service and the check: every report gains a field the contract does not allow.
    const proxy = await front(config.COORDINATOR_URL, (req, forward) => {
      if (req.method !== 'PATCH') return forward(req);
      const body = JSON.parse(req.body) as Record<string, unknown>;
      return forward({ ...req, body: JSON.stringify({ ...body, message: 'working on it' }) });
    });
    stops.push(proxy.stop);
    coordinatorUrl = proxy.url;
  }
  const service = await startTaskService(
    {
      name: `check target (${defect})`,
      version: '1.0.0',
      auth:
        defect === 'tokens'
          ? { mode: 'none' }
          : {
              mode: 'jwks',
              issuer: config.AUTH_ISSUER,
              jwksUri: config.AUTH_JWKS_URI,
              audience: [config.AUTH_AUDIENCE],
            },
      signingSecrets: defect === 'signatures' ? undefined : () => [secret],
      coordinatorUrl,
      callbackToken: clientCredentials(config.TOKEN_URL, config.CLIENT_ID, config.CLIENT_SECRET),
      stageSeconds: 0.5,
      publishSeconds: 0.5,
      progressSteps: 2,
      failAt: [],
    },
    { port: 0, host: '127.0.0.1' },
  );
  stops.push(() => service.stop());
  if (defect === 'reference') return { url: service.url, stop: () => stopAll(stops) };

  const started = new Set<string>();
  const published = new Set<string>();
  const verifier = JwtVerifier.create(
    { issuer: config.AUTH_ISSUER, audience: null, jwksUri: config.AUTH_JWKS_URI },
    {
      jwksCache: new SimpleJwksCache({
        fetcher: { fetch: async (uri: string) => (await fetch(uri)).arrayBuffer() },
      }),
    },
  );
  const handle = async (req: Req, forward: Forward): Promise<Res> => {
    const act = actionOf(req);
    switch (defect) {
      case 'status':
        if (req.path === '/status') return json(200, { message: 'ready', version: '1.0.0' });
        break;
      case 'staging':
      case 'publishing': {
        const which = defect === 'staging' ? 'start' : 'publish';
        if (act?.action !== which) break;
        const out = await forward(req);
        const seen = defect === 'staging' ? started : published;
        const body = JSON.parse(out.body);
        if (out.status === 200 && !seen.has(act.task_id ?? '')) {
          seen.add(act.task_id ?? '');
          body.state = defect === 'staging' ? 'pending' : 'staged';
        }
        return { status: out.status, body: JSON.stringify(body) };
      }
      case 'cancel':
        if (act?.action !== 'cancel') break;
        {
          const out = await forward(resign(req, JSON.stringify({ ...act, action: 'get_status' })));
          const body = JSON.parse(out.body);
          return out.status === 200 ? json(200, { ...body, state: 'canceled' }) : out;
        }
      case 'repeats':
        if (act?.action !== 'start') break;
        if (started.has(act.task_id ?? '')) return json(503, { message: 'already started' });
        started.add(act.task_id ?? '');
        break;
      case 'unknown-task': {
        if (!act) break;
        const out = await forward(req);
        if (out.status !== 404) return out;
        return json(200, {
          name: 'check target',
          kf_id: act.task_id,
          release_id: act.release_id,
          state: 'pending',
          progress: 0,
          date_submitted: new Date().toISOString(),
        });
      }
      case 'unknown-action':
        if (!act || ['initialize', 'start', 'get_status', 'publish', 'cancel'].includes(act.action ?? ''))
          break;
        return forward(resign(req, JSON.stringify({ ...act, action: 'get_status' })));
      case 'tokens': {
        const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
        try {
          await verifier.verify(m?.[1] ?? '');
        } catch {
          return json(401, { message: 'invalid token' });
        }
        break;
      }
      case 'signatures':
        if (!act) break;
        try {
          new Webhook(secret).verify(req.body, req.headers);
        } catch {
          return json(401, { message: 'the signature does not verify' });
        }
        break;
      default:
        break;
    }
    return forward(req);
  };
  const proxied = await front(service.url, handle);
  stops.push(proxied.stop);
  return { url: proxied.url, stop: () => stopAll(stops) };
}

async function stopAll(stops: (() => Promise<void>)[]) {
  for (const stop of stops.reverse()) await stop();
}
