import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real, tiny task service over HTTP for tests. GET /status answers according to `status` (changeable at any time);
 * POST /tasks answers according to `action`. Every request is recorded with its headers, so tests can check the
 * coordinator's bearer token.
 */
export type StubBehaviour =
  | { kind: 'ok'; name?: string; body?: unknown }
  | { kind: 'status'; status: number }
  | { kind: 'not_json' }
  | { kind: 'json'; body: unknown }
  | { kind: 'hang' }
  | { kind: 'reset' };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface TaskServiceStub {
  url: string;
  status: StubBehaviour;
  action: StubBehaviour;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startTaskServiceStub(opts: { name?: string } = {}): Promise<TaskServiceStub> {
  const name = opts.name ?? 'stub task service';
  const stub: TaskServiceStub = {
    url: '',
    status: { kind: 'ok' },
    action: { kind: 'ok' },
    requests: [],
    close: async () => {},
  };
  const hanging = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0];
      stub.requests.push({
        method: req.method ?? 'GET',
        path,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      });
      const behaviour = path === '/status' ? stub.status : path === '/tasks' ? stub.action : null;
      if (!behaviour) {
        res.writeHead(404, { 'Content-Type': 'application/json' });
        res.end('{"message":"not found"}');
        return;
      }
      switch (behaviour.kind) {
        case 'ok': {
          const body =
            behaviour.body ??
            (path === '/status'
              ? { name: behaviour.name ?? name, message: 'ready', version: '1.0.0' }
              : { name, state: 'pending', progress: 0 });
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify(body));
          return;
        }
        case 'json':
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify(behaviour.body));
          return;
        case 'status':
          res.writeHead(behaviour.status, { 'Content-Type': 'application/json' });
          res.end('{"message":"unavailable"}');
          return;
        case 'not_json':
          res.writeHead(200, { 'Content-Type': 'text/html' });
          res.end('<html>hello</html>');
          return;
        case 'reset':
          req.socket.destroy();
          return;
        case 'hang':
          // Never answers; released on close so the server can stop.
          hanging.add(() => res.destroy());
          return;
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  stub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stub.close = () =>
    new Promise<void>((r) => {
      for (const release of hanging) release();
      server.closeAllConnections?.();
      server.close(() => r());
    });
  return stub;
}

/** A URL on which nothing listens: connections are refused. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return `http://127.0.0.1:${port}`;
}
