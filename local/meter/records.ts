/**
 * What the cost meter writes: one JSON line per billable thing into LOCAL_METER_FILE (local/meter/meter.ts writes
 * them; `npm run cost:measure` reads them).
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
 * Each record carries the id of the handler invocation that caused it (`inv`), so costs can be split by function;
 * requests from outside any handler (a browser following a redirect) have none.
 */

/** The request header that carries the invocation id from a handler's SDK call to the meter's proxies. */
export const METER_HEADER = 'x-local-meter-invocation';

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
   * Write request units, computed by the meter from the item before and after the write (DynamoDB Local misreports
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
