import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { subscribe } from 'node:diagnostics_channel';
import { appendFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DescribeTableCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';

/**
 * The meter behind `npm run cost:measure`: with LOCAL_METER_FILE set, the local stack records what AWS would bill,
 * one JSON line per billable thing, into that file. Off (and never imported) otherwise.
 *
 *   invoke   every Lambda handler call (API route, state-machine task, schedule): its duration, the bytes it wrote
 *            to stdout/stderr (CloudWatch Logs on AWS) and, for API calls, method, route, status and body sizes
 *   ddb      every DynamoDB request, through a proxy between the handlers and DynamoDB Local that asks for
 *            ReturnConsumedCapacity=INDEXES (table and index units as DynamoDB Local computes them: reads per 4 KB,
 *            eventually consistent x0.5, transactional x2, writes per 1 KB, transactional x2, GSI writes included)
 *   s3       every S3 request, through a proxy in front of s3rver (presigned URLs name the proxy, so the clients'
 *            own GETs are counted too), with its request class and the bytes it returned
 *   sns      every publish to the events topic (a counting stand-in for SNS, used only when no sink is configured)
 *
 * Each record carries the id of the handler invocation that caused it (an AsyncLocalStorage context, passed to the
 * proxies in a request header set when the SDK creates its HTTP request), so costs can be split by function; requests
 * from outside any handler (a browser following a redirect) have none.
 *
 * Why it lives in local/ and not in bench/, beside its one reader (bench/cost/measure.ts): it is part of the running
 * local stack. bin/local.ts starts its proxies as components and local/handlers.ts wraps every handler with it, in
 * the stack's own process, whichever program started the stack; bench/cost only reads the file it writes (with the
 * record types and itemSize below). In bench/ it would make the local stack import benchmark code.
 */
export const METER_HEADER = 'x-local-meter-invocation';

interface InvocationContext {
  id: string;
  logBytes: number;
  logLines: number;
}

/** Where a Lambda call came from, told by the shape of its event. */
export type Trigger = 'api' | 'task' | 'schedule';

export interface InvokeRecord {
  k: 'invoke';
  id: string;
  entry: string;
  trigger: Trigger;
  at: number;
  ms: number;
  ok: boolean;
  logBytes: number;
  logLines: number;
  api?: {
    method: string;
    routeKey: string;
    path: string;
    status: number;
    requestBytes: number;
    responseBytes: number;
  };
}

export interface DdbRecord {
  k: 'ddb';
  inv?: string;
  at: number;
  op: string;
  /**
   * Read request units: what DynamoDB Local reports (reads per 4 KB, eventually consistent x0.5, transactional x2,
   * the queried index's units included).
   */
  read: number;
  /**
   * Write request units, computed here from the item before and after the write (DynamoDB Local misreports
   * transactions: it counts a TransactWriteItems of six items as two). 1 KB steps of the larger image, x2 in a
   * transaction, plus one index write per GSI entry added, changed or removed (two when its key changes).
   */
  write: number;
  /** What DynamoDB Local itself reported, for comparison. */
  localUnits: number;
  /** Reads: the units computed from the items returned, where the request read whole items (a cross-check). */
  computedRead?: number;
  /** A write refused by its condition, or a canceled transaction. */
  failed?: string;
}

export interface S3Record {
  k: 's3';
  inv?: string;
  at: number;
  method: string;
  /** S3's price classes: 'tier1' = PUT, COPY, POST, LIST; 'tier2' = GET, HEAD and the rest; 'free' = DELETE. */
  tier: 'tier1' | 'tier2' | 'free';
  op: string;
  status: number;
  bytesOut: number;
}

export interface SnsRecord {
  k: 'sns';
  inv?: string;
  at: number;
  action: string;
  messages: number;
  bytes: number;
}

export type MeterRecord = InvokeRecord | DdbRecord | S3Record | SnsRecord;

/** Operations that accept ReturnConsumedCapacity. */
const CAPACITY_OPS = new Set([
  'GetItem',
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'Query',
  'Scan',
  'BatchGetItem',
  'BatchWriteItem',
  'TransactGetItems',
  'TransactWriteItems',
  'ExecuteStatement',
  'BatchExecuteStatement',
  'ExecuteTransaction',
]);

/** How many bytes of handler log text are kept beside the records, to measure how well the logs compress. */
const LOG_SAMPLE_BYTES = 2 * 1024 * 1024;

let active: Meter | undefined;

/** The meter of this process, or undefined when LOCAL_METER_FILE is not set. */
export function meter(env: NodeJS.ProcessEnv = process.env): Meter | undefined {
  if (!env.LOCAL_METER_FILE) return undefined;
  active ??= new Meter(env.LOCAL_METER_FILE);
  return active;
}

export class Meter {
  private readonly als = new AsyncLocalStorage<InvocationContext>();
  private readonly servers: Server[] = [];
  private readonly readers: Record<string, DynamoDBClient> = {};
  private readonly described: Record<string, Promise<TableSchema>> = {};
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
    const to = new URL(target);
    const server = createServer((req, res) => {
      const inv = header(req, METER_HEADER);
      delete req.headers[METER_HEADER];
      const at = Date.now();
      const forward = (
        body: Buffer | null,
        onResponse: (status: number, bytes: number, body: Buffer) => void,
      ) => {
        const headers = { ...req.headers };
        if (body) headers['content-length'] = String(body.length);
        const upstream = request(
          { host: to.hostname, port: to.port, method: req.method, path: req.url, headers },
          (up) => {
            res.writeHead(up.statusCode ?? 502, up.headers);
            const chunks: Buffer[] = [];
            let bytes = 0;
            up.on('data', (c: Buffer) => {
              bytes += c.length;
              if (kind === 'dynamodb') chunks.push(c);
              res.write(c);
            });
            up.on('end', () => {
              res.end();
              onResponse(up.statusCode ?? 0, bytes, Buffer.concat(chunks));
            });
          },
        );
        upstream.on('error', (err) => {
          res.writeHead(502);
          res.end(String(err));
        });
        if (body) upstream.end(body);
        else req.pipe(upstream);
      };
      if (kind === 's3') {
        forward(null, (status, bytes) =>
          this.record({
            k: 's3',
            ...(inv ? { inv } : {}),
            at,
            method: req.method ?? 'GET',
            ...s3Class(req),
            status,
            bytesOut: bytes,
          }),
        );
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const op = (header(req, 'x-amz-target') ?? '').split('.').pop() ?? '';
        let body = Buffer.concat(chunks);
        let parsed: any;
        if (CAPACITY_OPS.has(op)) {
          try {
            parsed = JSON.parse(body.toString('utf8'));
            parsed.ReturnConsumedCapacity = 'INDEXES';
            body = Buffer.from(JSON.stringify(parsed));
          } catch {
            parsed = undefined;
          }
        }
        const images = this.itemReader(target);
        const tables = parsed ? await this.schemas(target, writtenTables(op, parsed)) : {};
        const targets = parsed ? writeTargets(op, parsed, tables) : [];
        const before = await Promise.all(targets.map((t) => images(t.table, t.key)));
        forward(body, async (status, _bytes, out) => {
          if (!CAPACITY_OPS.has(op)) return;
          let answer: any;
          try {
            answer = JSON.parse(out.toString('utf8'));
          } catch {
            return;
          }
          const base = { k: 'ddb' as const, ...(inv ? { inv } : {}), at, op };
          if (status === 200) {
            const local = [answer.ConsumedCapacity ?? []]
              .flat()
              .reduce((n: number, c: any) => n + Number(c?.CapacityUnits ?? 0), 0);
            if (!targets.length) {
              // The units of the items returned where the read returned whole items, else DynamoDB Local's; never
              // below the least a read is billed (DynamoDB Local reports 0 for a query that matches nothing).
              const computedRead = readUnits(op, parsed, answer);
              const least =
                op === 'TransactGetItems'
                  ? 2
                  : parsed?.ConsistentRead === true && !parsed?.IndexName
                    ? 1
                    : 0.5;
              const read = computedRead ?? Math.max(local, least);
              this.record({
                ...base,
                read,
                write: 0,
                localUnits: local,
                ...(computedRead === undefined ? {} : { computedRead }),
              });
              return;
            }
            const after = await Promise.all(targets.map((t) => images(t.table, t.key)));
            const factor = op === 'TransactWriteItems' ? 2 : 1;
            const write = targets.reduce(
              (n, t, i) => n + factor * writeUnits(t, before[i], after[i], tables[t.table]),
              0,
            );
            this.record({ ...base, read: 0, write, localUnits: local });
            return;
          }
          const type =
            String(answer.__type ?? '')
              .split('#')
              .pop() ?? 'error';
          if (type === 'ConditionalCheckFailedException' || type === 'TransactionCanceledException')
            this.record({
              ...base,
              read: 0,
              // What AWS bills a write refused by its condition: the existing item's size, at least one unit; a
              // canceled transaction is counted the same way per item (an estimate: its prepare phase).
              write: targets.reduce((n, _t, i) => n + Math.max(1, Math.ceil(itemSize(before[i]) / 1024)), 0),
              localUnits: 0,
              failed: type,
            });
        });
      });
    });
    return this.listen(server);
  }

  /** Reads an item straight from DynamoDB Local (not through the proxy), to see it before and after a write. */
  private itemReader(endpoint: string) {
    this.readers[endpoint] ??= new DynamoDBClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'meter', secretAccessKey: 'meter' },
    });
    const client = this.readers[endpoint];
    return async (table: string, key: Record<string, any>): Promise<Record<string, any> | undefined> => {
      if (!table || !key || Object.keys(key).length === 0) return undefined;
      try {
        const out = await client.send(
          new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }),
        );
        return out.Item as Record<string, any> | undefined;
      } catch (err) {
        // A table that does not exist (yet): the write itself will say so; the meter just sees no item.
        process.stderr.write(
          `meter: could not read ${table}: ${err instanceof Error ? err.message : String(err)}\n`,
        );
        return undefined;
      }
    };
  }

  /**
   * Key schema and indexes (keys and projection) of each table, as DynamoDB Local describes it, so the meter follows
   * whatever the tables become. Asked once per table.
   */
  private async schemas(endpoint: string, names: string[]): Promise<Record<string, TableSchema>> {
    this.readers[endpoint] ??= new DynamoDBClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'meter', secretAccessKey: 'meter' },
    });
    const client = this.readers[endpoint];
    const out: Record<string, TableSchema> = {};
    for (const name of names) {
      this.described[name] ??= client
        .send(new DescribeTableCommand({ TableName: name }))
        .then(({ Table: t }) => {
          const keys = (schema?: { AttributeName?: string }[]) =>
            (schema ?? []).map((k) => k.AttributeName ?? '');
          return {
            keys: keys(t?.KeySchema),
            indexes: (t?.GlobalSecondaryIndexes ?? []).map((g) => ({
              keys: keys(g.KeySchema),
              projection: (g.Projection?.ProjectionType ?? 'ALL') as IndexSchema['projection'],
              include: g.Projection?.NonKeyAttributes ?? [],
            })),
          };
        })
        .catch(() => ({ keys: [], indexes: [] }));
      out[name] = await this.described[name];
    }
    return out;
  }

  /**
   * A stand-in for the SNS events topic (AWS query protocol: Publish and PublishBatch), so the stack publishes its
   * events as a deployed one does and each publish is counted. Answers every message as delivered.
   */
  async snsSink(): Promise<string> {
    const server = createServer((req, res) => {
      const inv = header(req, METER_HEADER);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        const form = new URLSearchParams(raw.toString('utf8'));
        const action = form.get('Action') ?? '';
        const ids = [...form.keys()]
          .map((k) => /^PublishBatchRequestEntries\.member\.(\d+)\.Id$/.exec(k))
          .filter((m): m is RegExpExecArray => m !== null)
          .map((m) => form.get(m[0]) ?? '');
        this.record({
          k: 'sns',
          ...(inv ? { inv } : {}),
          at: Date.now(),
          action,
          messages: action === 'PublishBatch' ? ids.length : 1,
          bytes: raw.length,
        });
        const rid = randomUUID();
        const xml =
          action === 'PublishBatch'
            ? `<PublishBatchResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishBatchResult><Successful>${ids
                .map((id) => `<member><Id>${id}</Id><MessageId>${randomUUID()}</MessageId></member>`)
                .join(
                  '',
                )}</Successful><Failed/></PublishBatchResult><ResponseMetadata><RequestId>${rid}</RequestId></ResponseMetadata></PublishBatchResponse>`
            : `<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>${randomUUID()}</MessageId></PublishResult><ResponseMetadata><RequestId>${rid}</RequestId></ResponseMetadata></PublishResponse>`;
        res.writeHead(200, { 'Content-Type': 'text/xml', 'x-amzn-RequestId': rid });
        res.end(xml);
      });
    });
    return this.listen(server);
  }

  private async listen(server: Server): Promise<string> {
    server.keepAliveTimeout = 5000;
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
    this.servers.push(server);
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const c of Object.values(this.readers)) c.destroy();
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

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function bodyBytes(body: unknown, base64: unknown): number {
  if (typeof body !== 'string') return 0;
  return base64 ? Buffer.from(body, 'base64').length : Buffer.byteLength(body);
}

/** S3's request class of a path-style request (bucket first): what its price table calls it. */
export function s3Class(req: { method?: string; url?: string; headers: Record<string, unknown> }): {
  tier: 'tier1' | 'tier2' | 'free';
  op: string;
} {
  const url = new URL(req.url ?? '/', 'http://s3');
  const objectKey = url.pathname.split('/').filter(Boolean).length > 1;
  const q = url.searchParams;
  switch (req.method) {
    case 'PUT':
      if (req.headers['x-amz-copy-source']) return { tier: 'tier1', op: 'CopyObject' };
      return {
        tier: 'tier1',
        op: q.has('partNumber') ? 'UploadPart' : objectKey ? 'PutObject' : 'PutBucket',
      };
    case 'POST':
      if (q.has('uploads')) return { tier: 'tier1', op: 'CreateMultipartUpload' };
      if (q.has('uploadId')) return { tier: 'tier1', op: 'CompleteMultipartUpload' };
      if (q.has('delete')) return { tier: 'tier1', op: 'DeleteObjects' };
      return { tier: 'tier1', op: 'PostObject' };
    case 'GET':
      if (!objectKey || q.has('uploadId') || q.has('uploads') || q.has('list-type'))
        return { tier: 'tier1', op: 'List' };
      return { tier: 'tier2', op: 'GetObject' };
    case 'HEAD':
      return { tier: 'tier2', op: 'HeadObject' };
    case 'DELETE':
      return { tier: 'free', op: q.has('uploadId') ? 'AbortMultipartUpload' : 'DeleteObject' };
    default:
      return { tier: 'tier2', op: req.method ?? 'unknown' };
  }
}

/** DynamoDB's item size: attribute names plus values (strings and binaries by length, numbers by digits). */
export function itemSize(item: Record<string, any> | undefined): number {
  if (!item) return 0;
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += Buffer.byteLength(name) + valueSize(value);
  return size;
}

function valueSize(v: any): number {
  if (!v || typeof v !== 'object') return 0;
  if ('S' in v) return Buffer.byteLength(v.S);
  if ('N' in v) return Math.ceil(String(v.N).replace(/^-|\.|e.*$/gi, '').length / 2) + 1;
  if ('B' in v) return Buffer.from(v.B, 'base64').length;
  if ('BOOL' in v || 'NULL' in v) return 1;
  if ('SS' in v) return v.SS.reduce((n: number, s: string) => n + Buffer.byteLength(s), 0);
  if ('NS' in v) return v.NS.reduce((n: number, s: string) => n + valueSize({ N: s }), 0);
  if ('BS' in v) return v.BS.reduce((n: number, s: string) => n + Buffer.from(s, 'base64').length, 0);
  if ('L' in v) return 3 + v.L.reduce((n: number, x: any) => n + 1 + valueSize(x), 0);
  if ('M' in v) return 3 + itemSize(v.M) + Object.keys(v.M).length;
  return 0;
}

interface WriteTarget {
  table: string;
  key: Record<string, any>;
  kind: 'put' | 'update' | 'delete' | 'check';
}

export interface IndexSchema {
  keys: string[];
  projection: 'ALL' | 'KEYS_ONLY' | 'INCLUDE';
  include: string[];
}

/** A table's key attributes and its global secondary indexes. */
export interface TableSchema {
  keys: string[];
  indexes: IndexSchema[];
}

/** The tables a write request names. */
export function writtenTables(op: string, body: any): string[] {
  if (op === 'BatchWriteItem') return Object.keys(body.RequestItems ?? {});
  if (op === 'TransactWriteItems')
    return [
      ...new Set<string>(
        (body.TransactItems ?? []).map(
          (t: any) => (t.Put ?? t.Update ?? t.Delete ?? t.ConditionCheck)?.TableName,
        ),
      ),
    ];
  return ['PutItem', 'UpdateItem', 'DeleteItem'].includes(op) ? [body.TableName] : [];
}

/** The items a write request touches, by table and key. */
export function writeTargets(op: string, body: any, tables: Record<string, TableSchema>): WriteTarget[] {
  const keyOf = (table: string, item: Record<string, any>) =>
    Object.fromEntries((tables[table]?.keys ?? []).filter((n) => item[n]).map((n) => [n, item[n]]));
  switch (op) {
    case 'PutItem':
      return [{ table: body.TableName, key: keyOf(body.TableName, body.Item ?? {}), kind: 'put' }];
    case 'UpdateItem':
      return [{ table: body.TableName, key: body.Key, kind: 'update' }];
    case 'DeleteItem':
      return [{ table: body.TableName, key: body.Key, kind: 'delete' }];
    case 'BatchWriteItem':
      return Object.entries(body.RequestItems ?? {}).flatMap(([table, reqs]: [string, any]) =>
        (reqs as any[]).map((r) =>
          r.PutRequest
            ? { table, key: keyOf(table, r.PutRequest.Item), kind: 'put' as const }
            : { table, key: r.DeleteRequest?.Key ?? {}, kind: 'delete' as const },
        ),
      );
    case 'TransactWriteItems':
      return (body.TransactItems ?? []).map((t: any) => {
        if (t.Put) return { table: t.Put.TableName, key: keyOf(t.Put.TableName, t.Put.Item), kind: 'put' };
        if (t.Update) return { table: t.Update.TableName, key: t.Update.Key, kind: 'update' };
        if (t.Delete) return { table: t.Delete.TableName, key: t.Delete.Key, kind: 'delete' };
        return { table: t.ConditionCheck?.TableName, key: t.ConditionCheck?.Key, kind: 'check' };
      });
    default:
      return [];
  }
}

const kb = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));

/** JSON with object keys sorted, so two reads of one item compare equal whatever order they list attributes in. */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => a.localeCompare(b)))
      : x,
  );

/** The part of an item an index holds: the table's and the index's keys, plus what the index projects. */
function projected(item: Record<string, any> | undefined, index: IndexSchema, tableKeys: string[]) {
  if (!item || index.projection === 'ALL') return item;
  const names = new Set([
    ...tableKeys,
    ...index.keys,
    ...(index.projection === 'INCLUDE' ? index.include : []),
  ]);
  return Object.fromEntries(Object.entries(item).filter(([k]) => names.has(k)));
}

/**
 * Standard write units of one item's write, from its images before and after: the table's write in 1 KB steps of
 * the larger image, and one write per global secondary index entry added, updated or removed (a changed index key
 * is a removal and an addition), sized by what the index projects; an index whose projected part did not change is
 * not written. A condition check is billed as a write of the item it checks.
 */
export function writeUnits(
  target: WriteTarget,
  before: Record<string, any> | undefined,
  after: Record<string, any> | undefined,
  schema: TableSchema = { keys: [], indexes: [] },
): number {
  let units = kb(Math.max(itemSize(before), itemSize(after)));
  if (target.kind === 'check') return units;
  for (const index of schema.indexes) {
    const keyOf = (item?: Record<string, any>) =>
      item && index.keys.every((n) => item[n] !== undefined)
        ? JSON.stringify(index.keys.map((n) => item[n]))
        : null;
    const was = keyOf(before);
    const is = keyOf(after);
    const b = projected(before, index, schema.keys);
    const a = projected(after, index, schema.keys);
    if (was && is) {
      if (was !== is) units += kb(itemSize(b)) + kb(itemSize(a));
      else if (canonical(b) !== canonical(a)) units += kb(Math.max(itemSize(b), itemSize(a)));
    } else if (was) units += kb(itemSize(b));
    else if (is) units += kb(itemSize(a));
  }
  return units;
}

/**
 * Read units from the items a read returned, where it returned whole items (no projection, not a count): 4 KB steps
 * of the total (per item for GetItem and batch/transactional gets), x0.5 eventually consistent, x2 transactional.
 */
export function readUnits(op: string, body: any, answer: any): number | undefined {
  if (!body || body.ProjectionExpression || body.Select === 'COUNT' || body.AttributesToGet) return undefined;
  const consistent = body.ConsistentRead === true;
  const steps = (bytes: number) => Math.max(1, Math.ceil(bytes / 4096));
  switch (op) {
    case 'GetItem':
      return steps(itemSize(answer.Item)) * (consistent ? 1 : 0.5);
    case 'Query':
    case 'Scan':
      return (
        steps((answer.Items ?? []).reduce((n: number, i: any) => n + itemSize(i), 0)) *
        (consistent && !body.IndexName ? 1 : 0.5)
      );
    case 'TransactGetItems':
      return (answer.Responses ?? []).reduce((n: number, r: any) => n + 2 * steps(itemSize(r.Item)), 0);
    default:
      return undefined;
  }
}
