import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { TaskService } from './service.js';

/**
 * The largest request body `serve` reads: 1 MiB. Larger ones are refused (413); an action is a small JSON object.
 *
 * @example
 * ```ts
 * import { MAX_BODY_BYTES } from '@release-coordinator/task-service';
 *
 * const tooLarge = Buffer.byteLength(body) > MAX_BODY_BYTES;
 * ```
 */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * A service that `serve` started.
 *
 * @example
 * ```ts
 * import { type RunningServer, serve } from '@release-coordinator/task-service';
 *
 * const running: RunningServer = await serve(service);
 * console.log(`listening on ${running.url}`);
 * await running.stop();
 * ```
 */
export interface RunningServer {
  /** Where it listens, e.g. http://127.0.0.1:4000. */
  url: string;
  server: Server;
  /** Stops the work, closes every connection and frees the port. */
  stop(): Promise<void>;
}

/**
 * The kit as a plain Node HTTP server, on `listen` (default: a free port on 127.0.0.1).
 *
 * @example
 * ```ts
 * import { createTaskService, serve } from '@release-coordinator/task-service';
 *
 * const service = createTaskService(work, { name: 'stager', auth: { mode: 'none' } });
 * const running = await serve(service, { port: 4000, host: '0.0.0.0' });
 * ```
 */
export async function serve(
  service: TaskService,
  listen: { port: number; host: string } = { port: 0, host: '127.0.0.1' },
): Promise<RunningServer> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY_BYTES) chunks.push(c);
    });
    req.on('end', async () => {
      if (size > MAX_BODY_BYTES) {
        res.writeHead(413, { 'Content-Type': 'application/json' });
        res.end(
          JSON.stringify({
            message: `the body is larger than ${MAX_BODY_BYTES} bytes`,
            code: 'invalid_input',
          }),
        );
        return;
      }
      const headers: Record<string, string | undefined> = {};
      for (const [name, value] of Object.entries(req.headers))
        headers[name] = Array.isArray(value) ? value.join(', ') : value;
      const answer = await service.handle({
        method: req.method ?? 'GET',
        path: (req.url ?? '/').split('?')[0],
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      res.writeHead(answer.status, { ...answer.headers, 'Content-Length': Buffer.byteLength(answer.body) });
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const { port } = server.address() as { port: number };
  const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  return {
    url: `http://${host}:${port}`,
    server,
    stop: async () => {
      service.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
