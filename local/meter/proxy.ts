import { type IncomingMessage, request, type ServerResponse } from 'node:http';
import {
  leastReadUnits,
  readUnits,
  refusedWriteUnits,
  writeTargets,
  writeUnits,
  writtenTables,
} from './capacity.js';
import { METER_HEADER, type MeterRecord } from './records.js';
import { s3Class } from './s3-class.js';
import type { TableReader } from './table-reader.js';

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

export function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Sends the request on to `to` (with `body` when given, else the request's own stream) and streams the answer back;
 * `onResponse` gets its status, its size and, when `keep` is set, its bytes.
 */
function forward(
  req: IncomingMessage,
  res: ServerResponse,
  to: URL,
  keep: boolean,
  body: Buffer | null,
  onResponse: (status: number, bytes: number, body: Buffer) => void,
): void {
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
        if (keep) chunks.push(c);
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
}

/** The counting proxy in front of s3rver: one record per request, with its price class and the bytes it returned. */
export function s3Proxy(target: string, record: (rec: MeterRecord) => void) {
  const to = new URL(target);
  return (req: IncomingMessage, res: ServerResponse) => {
    const inv = header(req, METER_HEADER);
    delete req.headers[METER_HEADER];
    const at = Date.now();
    forward(req, res, to, false, null, (status, bytes) =>
      record({
        k: 's3',
        ...(inv ? { inv } : {}),
        at,
        method: req.method ?? 'GET',
        ...s3Class(req),
        status,
        bytesOut: bytes,
      }),
    );
  };
}

/**
 * The counting proxy in front of DynamoDB Local. Each request that can report its capacity asks for it
 * (ReturnConsumedCapacity=INDEXES); a write's items are read before and after it, and its units computed from the
 * two images (capacity.ts); a read is billed by the items it returned where it returned whole items.
 */
export function dynamodbProxy(target: string, record: (rec: MeterRecord) => void, reader: TableReader) {
  const to = new URL(target);
  return (req: IncomingMessage, res: ServerResponse) => {
    const inv = header(req, METER_HEADER);
    delete req.headers[METER_HEADER];
    const at = Date.now();
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
      const images = reader.items(target);
      const tables = parsed ? await reader.schemas(target, writtenTables(op, parsed)) : {};
      const targets = parsed ? writeTargets(op, parsed, tables) : [];
      const before = await Promise.all(targets.map((t) => images(t.table, t.key)));
      forward(req, res, to, true, body, async (status, _bytes, out) => {
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
            // below the least a read is billed.
            const computedRead = readUnits(op, parsed, answer);
            const read = computedRead ?? Math.max(local, leastReadUnits(op, parsed));
            record({
              ...base,
              read,
              write: 0,
              localUnits: local,
              ...(computedRead === undefined ? {} : { computedRead }),
            });
            return;
          }
          const after = await Promise.all(targets.map((t) => images(t.table, t.key)));
          const transactional = op === 'TransactWriteItems';
          const write = targets.reduce(
            (n, t, i) => n + writeUnits(t, before[i], after[i], tables[t.table], transactional),
            0,
          );
          record({ ...base, read: 0, write, localUnits: local });
          return;
        }
        const type =
          String(answer.__type ?? '')
            .split('#')
            .pop() ?? 'error';
        if (type === 'ConditionalCheckFailedException' || type === 'TransactionCanceledException')
          record({
            ...base,
            read: 0,
            // A canceled transaction is counted as a refused write per item (an estimate: its prepare phase).
            write: before.reduce((n, item) => n + refusedWriteUnits(item), 0),
            localUnits: 0,
            failed: type,
          });
      });
    });
  };
}
