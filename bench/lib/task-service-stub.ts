import { createServer, type Server } from 'node:http';

/**
 * Many well-behaved task services behind one loopback server: service i lives at <base>/svc/<i>. Each answers
 * GET /status and POST /tasks and moves its tasks along at once (initialize -> pending, start -> running,
 * get_status -> staged, publish -> publishing -> published, cancel -> canceled), so a seeded release settles in
 * `staged` and generates no background work while the API is measured.
 *
 * `stagePolls` (default 1) makes a running task answer `running` to that many get_status calls minus one, its
 * progress rising each time, and `staged` to the last: a release then makes exactly that many poll rounds while
 * staging (the cost measurement's P). The stub never calls back.
 */
export async function startTaskServiceStub(opts: { stagePolls?: number } = {}): Promise<{
  urls: (n: number) => string[];
  stop(): Promise<void>;
}> {
  const stagePolls = Math.max(1, opts.stagePolls ?? 1);
  const polls = new Map<string, number>();
  const tasks = new Map<string, string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const m = /^\/svc\/(\d+)\/(status|tasks)\/?$/.exec(new URL(req.url ?? '/', 'http://x').pathname);
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (!m) return reply(404, { message: 'not found' });
      const name = `bench-service-${m[1]}`;
      if (m[2] === 'status' && req.method === 'GET')
        return reply(200, { name, message: 'ok', version: '1.0.0' });
      if (m[2] !== 'tasks' || req.method !== 'POST') return reply(405, { message: 'method not allowed' });
      let body: { action?: string; task_id?: string; release_id?: string };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return reply(400, { message: 'invalid JSON' });
      }
      const id = body.task_id ?? '';
      const current = tasks.get(id);
      const round = body.action === 'get_status' && current === 'running' ? (polls.get(id) ?? 0) + 1 : 0;
      if (round) polls.set(id, round);
      const next: Record<string, string | undefined> = {
        initialize: 'pending',
        start: 'running',
        get_status:
          current === 'running'
            ? round >= stagePolls
              ? 'staged'
              : 'running'
            : current === 'publishing'
              ? 'published'
              : current,
        publish: 'publishing',
        cancel: 'canceled',
      };
      const state = next[body.action ?? ''];
      if (!state)
        return reply(body.action && body.action in next ? 404 : 400, { message: 'bad action or task' });
      tasks.set(id, state);
      reply(200, {
        name,
        kf_id: id,
        release_id: body.release_id,
        state,
        progress:
          state === 'staged' || state === 'published'
            ? 100
            : state === 'running'
              ? Math.floor((100 * round) / stagePolls)
              : 0,
        date_submitted: new Date().toISOString(),
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    urls: (n) => Array.from({ length: n }, (_, i) => `${base}/svc/${i}`),
    stop: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
