import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { subscribe } from 'node:diagnostics_channel';
import { appendFileSync, writeFileSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dynamodbProxy, s3Proxy } from './proxy.js';
import { METER_HEADER, type MeterRecord, type Trigger } from './records.js';
import { snsSink } from './sns-sink.js';
import { TableReader } from './table-reader.js';

/**
 * The meter behind `npm run cost:measure`: with LOCAL_METER_FILE set, the local stack records what AWS would bill,
 * one JSON line per billable thing, into that file (records.ts). Off (and never imported) otherwise.
 *
 * Each record carries the id of the handler invocation that caused it: an AsyncLocalStorage context, passed to the
 * proxies in a request header set when the SDK creates its HTTP request.
 *
 * Why it lives in local/ and not beside its one reader (`npm run cost:measure`): it is part of the running local
 * stack. bin/local.ts starts its proxies as components and local/handlers.ts wraps every handler with it, in the
 * stack's own process, whichever program started the stack; the cost command only reads the file it writes (with
 * the record types of records.ts). Anywhere else it would make the local stack import that command's code.
 */

interface InvocationContext {
  id: string;
  logBytes: number;
  logLines: number;
}

/** How many bytes of handler log text are kept beside the records, to measure how well the logs compress. */
const LOG_SAMPLE_BYTES = 2 * 1024 * 1024;

let active: Meter | undefined;

/** The meter of this process, or undefined when LOCAL_METER_FILE is not set. */
export function meter(env: NodeJS.ProcessEnv = process.env): Meter | undefined {
  if (!env.LOCAL_METER_FILE) return undefined;
  active ??= new Meter(env.LOCAL_METER_FILE);
  return active;
}

function bodyBytes(body: unknown, base64: unknown): number {
  if (typeof body !== 'string') return 0;
  return base64 ? Buffer.from(body, 'base64').length : Buffer.byteLength(body);
}

export class Meter {
  private readonly als = new AsyncLocalStorage<InvocationContext>();
  private readonly servers: Server[] = [];
  private readonly reader = new TableReader();
  private logSample = 0;

  constructor(readonly file: string) {
    writeFileSync(file, '');
    writeFileSync(`${file}.logs`, '');
    // Tag every HTTP request a handler makes with its invocation, before the request's headers go out.
    subscribe('http.client.request.created', (message) => {
      const store = this.als.getStore();
      const req = (message as { request?: { setHeader(name: string, value: string): void } }).request;
      if (store && req) req.setHeader(METER_HEADER, store.id);
    });
    for (const stream of [process.stdout, process.stderr]) {
      const original = stream.write.bind(stream) as (...args: unknown[]) => boolean;
      stream.write = ((chunk: unknown, ...rest: unknown[]) => {
        const store = this.als.getStore();
        if (store)
          this.countLog(store, chunk, typeof rest[0] === 'string' ? (rest[0] as BufferEncoding) : 'utf8');
        return original(chunk, ...rest);
      }) as typeof stream.write;
    }
  }

  private countLog(store: InvocationContext, chunk: unknown, encoding: BufferEncoding) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : Buffer.from(chunk as Uint8Array);
    store.logBytes += buf.length;
    for (const byte of buf) if (byte === 10) store.logLines++;
    if (this.logSample < LOG_SAMPLE_BYTES) {
      this.logSample += buf.length;
      appendFileSync(`${this.file}.logs`, buf);
    }
  }

  record(rec: MeterRecord): void {
    appendFileSync(this.file, `${JSON.stringify(rec)}\n`);
  }

  /** The handler, recording each call. */
  wrap<H extends (event: any, context?: any) => Promise<unknown>>(entry: string, handler: H): H {
    const wrapped = async (event: any, context?: any) => {
      const store: InvocationContext = { id: randomUUID(), logBytes: 0, logLines: 0 };
      const at = Date.now();
      const t0 = performance.now();
      let ok = false;
      let result: any;
      try {
        result = await this.als.run(store, () => handler(event, context));
        ok = true;
        return result;
      } finally {
        const http = event?.requestContext?.http;
        const trigger: Trigger = http
          ? 'api'
          : event?.['detail-type'] === 'Scheduled Event'
            ? 'schedule'
            : 'task';
        this.record({
          k: 'invoke',
          id: store.id,
          entry,
          trigger,
          at,
          ms: performance.now() - t0,
          ok,
          logBytes: store.logBytes,
          logLines: store.logLines,
          ...(http
            ? {
                api: {
                  method: http.method,
                  routeKey: event.routeKey,
                  path: event.rawPath,
                  status: Number(result?.statusCode ?? (ok ? 200 : 500)),
                  requestBytes: bodyBytes(event.body, event.isBase64Encoded),
                  responseBytes: bodyBytes(result?.body, result?.isBase64Encoded),
                },
              }
            : {}),
        });
      }
    };
    return wrapped as H;
  }

  /** A counting proxy in front of DynamoDB Local or s3rver; answers the endpoint handlers should use instead. */
  async proxy(kind: 'dynamodb' | 's3', target: string): Promise<string> {
    const record = (rec: MeterRecord) => this.record(rec);
    return this.listen(kind === 's3' ? s3Proxy(target, record) : dynamodbProxy(target, record, this.reader));
  }

  /** The counting SNS stand-in (sns-sink.ts); answers its endpoint. */
  async snsSink(): Promise<string> {
    return this.listen(snsSink((rec) => this.record(rec)));
  }

  private async listen(listener: RequestListener): Promise<string> {
    const server = createServer(listener);
    server.keepAliveTimeout = 5000;
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
    this.servers.push(server);
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.reader.stop();
    await Promise.all(
      this.servers.map(
        (s) =>
          new Promise<void>((ok) => {
            s.close(() => ok());
            s.closeAllConnections();
          }),
      ),
    );
  }
}

/** The endpoint handlers should use for a component: the meter's proxy when metering, else the component's own. */
export async function metered(kind: 'dynamodb' | 's3', endpoint: string): Promise<string> {
  const m = meter();
  return m ? m.proxy(kind, endpoint) : endpoint;
}

/**
 * When metering and no event sink is configured, the events go to a counting SNS stand-in, as a deployed stack's do
 * (its default sink is an SNS topic).
 */
export async function meteredEventSink(): Promise<Record<string, string>> {
  const m = meter();
  if (!m || process.env.EVENTS_TOPIC_ARN || process.env.EVENTS_BUS_NAME) return {};
  return {
    EVENTS_TOPIC_ARN: `arn:aws:sns:${process.env.AWS_REGION ?? 'us-east-1'}:000000000000:local-metered-events`,
    AWS_ENDPOINT_URL_SNS: await m.snsSink(),
  };
}
