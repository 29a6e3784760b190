import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A proxy in front of DynamoDB Local for the handlers of one test file, that can stop a writer in the middle of a
 * multi-part write, as a process that dies there would: once armed, the TransactWriteItems the `match` picks after
 * the first `pass` of them are held (never forwarded, never answered). `fail()` then answers every held request with
 * a non-retryable error, so the writer that waited ends without writing (its execution is gone by then), and
 * disarms. Everything else is forwarded as it is.
 */
export interface HoldProxy {
  endpoint: string;
  /** Holds the TransactWriteItems `match` picks after the first `pass` of them. */
  arm(match: (body: TransactBody) => boolean, pass: number): void;
  /** How many requests are held now. */
  held(): number;
  /** Answers the held requests with a ValidationException (the writer gives up) and disarms. */
  fail(): void;
  close(): Promise<void>;
}

export interface TransactBody {
  TransactItems?: { Put?: any; Update?: any; Delete?: any; ConditionCheck?: any }[];
}

export async function startHoldProxy(target: string): Promise<HoldProxy> {
  const to = new URL(target);
  let armed: { match: (body: TransactBody) => boolean; pass: number; seen: number } | null = null;
  const holding: ServerResponse[] = [];
  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const out = request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 500, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    out.end(body);
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (armed && String(req.headers['x-amz-target']).endsWith('.TransactWriteItems')) {
        const parsed = JSON.parse(body.toString('utf8')) as TransactBody;
        if (armed.match(parsed) && armed.seen++ >= armed.pass) return void holding.push(res);
      }
      forward(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const proxy: HoldProxy = {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arm(match, pass) {
      armed = { match, pass, seen: 0 };
    },
    held: () => holding.length,
    fail() {
      armed = null;
      for (const res of holding.splice(0)) {
        res.writeHead(400, { 'Content-Type': 'application/x-amz-json-1.0' });
        res.end(
          JSON.stringify({
            __type: 'com.amazon.coral.validate#ValidationException',
            message: 'the writer died before this part',
          }),
        );
      }
    },
    async close() {
      proxy.fail();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  return proxy;
}
