import { randomUUID } from 'node:crypto';
import { Agent, createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  type FaithfulCounts,
  FaithfulRules,
  type FaithfulSettings,
  type KeySchema,
} from './dynamodb-faithful.js';

/**
 * The conflict-faithful DynamoDB: an HTTP proxy in front of DynamoDB Local that applies the rules of
 * dynamodb-faithful.ts to every request (conflicts, throttling) and forwards the rest unchanged. The local stack puts
 * it between the handlers and DynamoDB Local when DYNAMODB_FAITHFUL is set (bin/local.ts), and the tests do the same
 * (test/helpers/tables.ts). `GET /faithful` on it answers what it refused so far, as JSON (the benchmarks read it).
 */
export interface FaithfulProxy {
  endpoint: string;
  counts(): FaithfulCounts;
  stop(): Promise<void>;
}

export interface FaithfulProxyOptions {
  port?: number;
  host?: string;
  /** Chance and time, for tests that want a rule to fire on cue. */
  random?: () => number;
  now?: () => number;
}

export async function startFaithfulProxy(
  target: string,
  settings: FaithfulSettings,
  opts: FaithfulProxyOptions = {},
): Promise<FaithfulProxy> {
  const to = new URL(target);
  const agent = new Agent({ keepAlive: true, maxSockets: 128 });
  const describer = new DynamoDBClient({
    endpoint: target,
    region: process.env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  // Key schemas, asked once per table: the rules compare items by their key attributes.
  const schemas = new Map<string, KeySchema>();
  const described = new Map<string, Promise<void>>();
  const describe = (table: string) => {
    if (!described.has(table))
      described.set(
        table,
        describer
          .send(new DescribeTableCommand({ TableName: table }))
          .then(({ Table: t }) => {
            // The partition key first, then the sort key.
            const keys = [...(t?.KeySchema ?? [])]
              .sort((a, b) => (a.KeyType === 'HASH' ? -1 : b.KeyType === 'HASH' ? 1 : 0))
              .map((k) => k.AttributeName ?? '');
            schemas.set(table, { keys });
          })
          // A table that does not exist: DynamoDB Local will say so; the rules treat its items by table alone.
          .catch(() => {
            described.delete(table);
          }),
      );
    return described.get(table);
  };
  const rules = new FaithfulRules(
    settings,
    (table) => schemas.get(table) ?? { keys: [] },
    opts.now,
    opts.random,
  );

  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/faithful') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(rules.counts));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks);
      const op = (header(req, 'x-amz-target') ?? '').split('.').pop() ?? '';
      let body: Record<string, any> | undefined;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        body = undefined;
      }
      if (!body) return forward(req, res, raw, null, 0);
      await Promise.all(tablesOf(op, body).map(describe));
      const verdict = rules.admit(op, body);
      if (!verdict.forward) {
        const text = JSON.stringify(verdict.rejection.body);
        res.writeHead(400, {
          'Content-Type': 'application/x-amz-json-1.0',
          'Content-Length': Buffer.byteLength(text),
          'x-amzn-RequestId': randomUUID(),
        });
        res.end(text);
        return;
      }
      forward(
        req,
        res,
        verdict.body ? Buffer.from(JSON.stringify(verdict.body)) : raw,
        verdict.unprocessed ?? null,
        verdict.ticket,
      );
    });
  });

  function forward(
    req: IncomingMessage,
    res: import('node:http').ServerResponse,
    body: Buffer,
    unprocessed: { field: string; value: Record<string, unknown> } | null,
    ticket: number,
  ) {
    const headers = { ...req.headers, 'content-length': String(body.length) };
    const upstream = request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers, agent },
      (up) => {
        const parts: Buffer[] = [];
        up.on('data', (c: Buffer) => parts.push(c));
        up.on('end', () => {
          rules.done(ticket);
          let out = Buffer.concat(parts);
          const outHeaders = { ...up.headers };
          if (unprocessed && up.statusCode === 200) {
            // The keys held back join whatever DynamoDB Local itself left unprocessed.
            const answer = JSON.parse(out.toString('utf8'));
            const merged = { ...(answer[unprocessed.field] ?? {}) };
            for (const [table, v] of Object.entries(unprocessed.value)) {
              const had = merged[table];
              merged[table] = Array.isArray(v)
                ? [...(had ?? []), ...v]
                : {
                    ...(v as object),
                    Keys: [...(had?.Keys ?? []), ...((v as { Keys: unknown[] }).Keys ?? [])],
                  };
            }
            answer[unprocessed.field] = merged;
            out = Buffer.from(JSON.stringify(answer));
            delete outHeaders['x-amz-crc32'];
            outHeaders['content-length'] = String(out.length);
          }
          res.writeHead(up.statusCode ?? 502, outHeaders);
          res.end(out);
        });
        up.on('error', () => rules.done(ticket));
      },
    );
    upstream.on('error', (err) => {
      rules.done(ticket);
      if (!res.headersSent) res.writeHead(502);
      res.end(String(err));
    });
    upstream.end(body);
  }

  server.keepAliveTimeout = 5000;
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => ok());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    counts: () => rules.counts,
    stop: async () => {
      await new Promise<void>((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      });
      agent.destroy();
      describer.destroy();
    },
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The tables a request names, so their key schemas are known before the rules judge it. */
function tablesOf(op: string, body: Record<string, any>): string[] {
  if (op === 'TransactWriteItems' || op === 'TransactGetItems')
    return [
      ...new Set<string>(
        (body.TransactItems ?? []).map(
          (t: Record<string, any>) => (Object.values(t)[0] as { TableName: string })?.TableName,
        ),
      ),
    ];
  if (op === 'BatchGetItem' || op === 'BatchWriteItem') return Object.keys(body.RequestItems ?? {});
  return typeof body.TableName === 'string' ? [body.TableName] : [];
}
