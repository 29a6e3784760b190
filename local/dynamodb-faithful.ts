/**
 * The rules of the conflict-faithful DynamoDB (DYNAMODB_FAITHFUL, docs/architecture.md "DynamoDB's concurrency in
 * tests"): what real DynamoDB does to concurrent requests that DynamoDB Local, which applies them one at a time,
 * never does. Pure: the proxy in front of DynamoDB Local (dynamodb-faithful-proxy.ts) asks `admit` for each request
 * and calls `done` when DynamoDB Local has answered it; time and chance come from the constructor, so the unit tests
 * drive every rule.
 *
 * Conflicts follow "Transaction conflict handling in DynamoDB" (Amazon DynamoDB Developer Guide, transaction-apis):
 *   1. a PutItem, UpdateItem or DeleteItem of an item that an ongoing TransactWriteItems includes fails with
 *      TransactionConflictException;
 *   2. a TransactWriteItems that includes an item another ongoing TransactWriteItems includes is cancelled
 *      (TransactionCanceledException, reason TransactionConflict on that item);
 *   3. a TransactGetItems that includes an item an ongoing TransactWriteItems, BatchWriteItem, PutItem, UpdateItem or
 *      DeleteItem writes is cancelled the same way;
 *   4. a GetItem (and BatchGetItem, Query, Scan, which are read-committed) never conflicts.
 * Every item of a transaction counts, ConditionCheck items included (the guide says "an item within a
 * TransactWriteItems request"). A request is ongoing from its arrival until DynamoDB Local has answered it, but at
 * most `windowMs`: DynamoDB runs transactions in parallel and holds their items for the length of one (tens of
 * milliseconds), while DynamoDB Local queues them, so its answer can come seconds later; counting the queue would
 * make every burst conflict with itself, which DynamoDB does not do.
 *
 * Throttling: DynamoDB throttles a partition key that takes more than its share of throughput. Which key becomes hot
 * depends on traffic an emulator cannot reproduce, so the rule is a share: each request to a partition key is
 * throttled with probability `throttleShare`, drawn per partition key it touches. A throttled GetItem, PutItem,
 * UpdateItem, DeleteItem, Query or Scan fails with ThrottlingException; a transaction is cancelled with reason
 * ThrottlingError on each throttled item; a BatchGetItem or BatchWriteItem hands the throttled keys back unprocessed
 * (and fails with ThrottlingException when every key was throttled), as DynamoDB does.
 *
 * Not modelled: which of two conflicting transactions loses (here always the later one; DynamoDB may cancel either,
 * or both); a TransactWriteItems that meets an ongoing single write or TransactGetItems (the guide lists no such
 * conflict); conflicts of the individual writes of a BatchWriteItem; throttling by measured throughput (adaptive
 * capacity, the 1,000 WCU / 3,000 RCU per partition limits, GSI back-pressure); TransactionInProgressException.
 * ClientRequestToken idempotency needs no model: DynamoDB Local implements it.
 */

export const FAITHFUL_MODES = ['conflicts', 'throttle'] as const;
export type FaithfulMode = (typeof FAITHFUL_MODES)[number];

export interface FaithfulSettings {
  modes: ReadonlySet<FaithfulMode>;
  /** Share of the requests to one partition key that are throttled (DYNAMODB_THROTTLE_SHARE). */
  throttleShare: number;
  /** How long a request holds its items at most, in ms (DYNAMODB_CONFLICT_WINDOW_MS). */
  windowMs: number;
}

export const DEFAULT_THROTTLE_SHARE = 0.02;
export const DEFAULT_CONFLICT_WINDOW_MS = 25;

/**
 * DYNAMODB_FAITHFUL (comma-separated: conflicts, throttle), DYNAMODB_THROTTLE_SHARE (0..1, default 0.02) and
 * DYNAMODB_CONFLICT_WINDOW_MS (default 25). Null when DYNAMODB_FAITHFUL is unset or empty: DynamoDB Local as it is.
 */
export function faithfulSettings(env: NodeJS.ProcessEnv = process.env): FaithfulSettings | null {
  const raw = (env.DYNAMODB_FAITHFUL ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (raw.length === 0) return null;
  const unknown = raw.filter((m) => !(FAITHFUL_MODES as readonly string[]).includes(m));
  if (unknown.length)
    throw new Error(
      `Invalid configuration: DYNAMODB_FAITHFUL names ${unknown.join(', ')}; allowed: ${FAITHFUL_MODES.join(', ')}`,
    );
  const share = Number(env.DYNAMODB_THROTTLE_SHARE ?? DEFAULT_THROTTLE_SHARE);
  if (!Number.isFinite(share) || share < 0 || share > 1)
    throw new Error('Invalid configuration: DYNAMODB_THROTTLE_SHARE must be a number from 0 to 1');
  const windowMs = Number(env.DYNAMODB_CONFLICT_WINDOW_MS ?? DEFAULT_CONFLICT_WINDOW_MS);
  if (!Number.isFinite(windowMs) || windowMs <= 0)
    throw new Error('Invalid configuration: DYNAMODB_CONFLICT_WINDOW_MS must be a positive number');
  return { modes: new Set(raw as FaithfulMode[]), throttleShare: share, windowMs };
}

/** Key attribute names of a table (from DescribeTable): its partition key first, then its sort key. */
export interface KeySchema {
  keys: string[];
}

type AttributeValue = Record<string, unknown>;
type Json = Record<string, any>;

/** What kind of request holds an item, for the rules above. */
type Holder = 'transact-write' | 'single-write' | 'batch-write';

interface Hold {
  ticket: number;
  kind: Holder;
  since: number;
}

export interface Rejection {
  /** The name DynamoDB answers in `__type` (after the namespace). */
  type: 'TransactionCanceledException' | 'TransactionConflictException' | 'ThrottlingException';
  body: Json;
  /** Why, for the counts: a conflict or throttling. */
  cause: 'conflict' | 'throttle';
}

export type Verdict =
  | {
      forward: true;
      ticket: number;
      /** The request to forward when it had to change (a batch without its throttled keys). */
      body?: Json;
      /** Merged into the answer of a batch: the keys or writes handed back unprocessed. */
      unprocessed?: { field: 'UnprocessedKeys' | 'UnprocessedItems'; value: Json };
    }
  | { forward: false; rejection: Rejection };

const NS = 'com.amazonaws.dynamodb.v20120810#';
export const CONFLICT_MESSAGE = 'Transaction is ongoing for the item';
export const THROTTLE_MESSAGE =
  'Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html';

/** An item of a request: its table, its key (as the request spells it) and its partition key. */
interface ItemRef {
  table: string;
  id: string;
  partition: string;
}

export interface FaithfulCounts {
  requests: number;
  conflicts: Record<string, number>;
  throttled: Record<string, number>;
}

export class FaithfulRules {
  private readonly holds = new Map<string, Hold[]>();
  private readonly byTicket = new Map<number, string[]>();
  private seq = 0;
  readonly counts: FaithfulCounts = { requests: 0, conflicts: {}, throttled: {} };

  constructor(
    private readonly settings: FaithfulSettings,
    private readonly schemaOf: (table: string) => KeySchema,
    private readonly now: () => number = () => performance.now(),
    private readonly random: () => number = Math.random,
  ) {}

  /** Judges one request (`op` from X-Amz-Target, `body` its parsed JSON) before it reaches DynamoDB Local. */
  admit(op: string, body: Json): Verdict {
    this.counts.requests++;
    const ticket = ++this.seq;
    const throttle = this.settings.modes.has('throttle');
    const conflicts = this.settings.modes.has('conflicts');
    switch (op) {
      case 'TransactWriteItems': {
        const items = (body.TransactItems ?? []).map((t: Json) => {
          const [kind, action] = Object.entries(t)[0] as [string, Json];
          return this.ref(
            action.TableName,
            kind === 'Put' ? this.keyOf(action.TableName, action.Item) : action.Key,
          );
        });
        const fate = this.fates(items, throttle);
        const reasons = items.map((item: ItemRef) =>
          this.reasonFor(item, fate, conflicts, ['transact-write']),
        );
        if (reasons.some((r: Json) => r.Code !== 'None')) return this.cancel(op, reasons);
        this.hold(ticket, items, 'transact-write');
        return { forward: true, ticket };
      }
      case 'TransactGetItems': {
        const items = (body.TransactItems ?? []).map((t: Json) => this.ref(t.Get.TableName, t.Get.Key));
        const fate = this.fates(items, throttle);
        const reasons = items.map((item: ItemRef) =>
          this.reasonFor(item, fate, conflicts, ['transact-write', 'single-write', 'batch-write']),
        );
        if (reasons.some((r: Json) => r.Code !== 'None')) return this.cancel(op, reasons);
        return { forward: true, ticket };
      }
      case 'PutItem':
      case 'UpdateItem':
      case 'DeleteItem': {
        const item = this.ref(
          body.TableName,
          op === 'PutItem' ? this.keyOf(body.TableName, body.Item) : body.Key,
        );
        if (throttle && this.drawn()) return this.throttled(op, body.TableName, true);
        if (conflicts && this.heldBy(item.id, ['transact-write']))
          return this.reject(op, 'conflict', 'TransactionConflictException', { message: CONFLICT_MESSAGE });
        this.hold(ticket, [item], 'single-write');
        return { forward: true, ticket };
      }
      case 'GetItem':
      case 'Query':
      case 'Scan':
        if (throttle && this.drawn()) return this.throttled(op, body.TableName, false);
        return { forward: true, ticket };
      case 'BatchGetItem':
        return throttle ? this.batch(op, ticket, body, 'UnprocessedKeys') : { forward: true, ticket };
      case 'BatchWriteItem': {
        const verdict = throttle
          ? this.batch(op, ticket, body, 'UnprocessedItems')
          : ({ forward: true, ticket } as Verdict);
        if (verdict.forward) {
          const sent = verdict.body ?? body;
          const items = Object.entries(sent.RequestItems ?? {}).flatMap(([table, reqs]) =>
            (reqs as Json[]).map((r) =>
              this.ref(table, r.PutRequest ? this.keyOf(table, r.PutRequest.Item) : r.DeleteRequest?.Key),
            ),
          );
          this.hold(ticket, items, 'batch-write');
        }
        return verdict;
      }
      default:
        return { forward: true, ticket };
    }
  }

  /** The request of `ticket` was answered: it holds nothing any more. */
  done(ticket: number): void {
    for (const id of this.byTicket.get(ticket) ?? []) {
      const left = (this.holds.get(id) ?? []).filter((h) => h.ticket !== ticket);
      if (left.length) this.holds.set(id, left);
      else this.holds.delete(id);
    }
    this.byTicket.delete(ticket);
  }

  /** Items held right now (for tests and for the proxy's own bookkeeping). */
  held(): number {
    this.expire();
    return this.holds.size;
  }

  /** Which partition keys of a request are throttled: one draw per partition key. */
  private fates(items: ItemRef[], throttle: boolean): Map<string, boolean> {
    const fate = new Map<string, boolean>();
    for (const i of items) if (!fate.has(i.partition)) fate.set(i.partition, throttle && this.drawn());
    return fate;
  }

  private reasonFor(item: ItemRef, fate: Map<string, boolean>, conflicts: boolean, against: Holder[]): Json {
    if (fate.get(item.partition)) return { Code: 'ThrottlingError', Message: THROTTLE_MESSAGE };
    if (conflicts && this.heldBy(item.id, against))
      return { Code: 'TransactionConflict', Message: CONFLICT_MESSAGE };
    return { Code: 'None' };
  }

  private cancel(op: string, reasons: Json[]): Verdict {
    const cause = reasons.some((r) => r.Code === 'TransactionConflict') ? 'conflict' : 'throttle';
    return this.reject(op, cause, 'TransactionCanceledException', {
      CancellationReasons: reasons,
      Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
    });
  }

  private throttled(op: string, table: string | undefined, write: boolean): Verdict {
    return this.reject(op, 'throttle', 'ThrottlingException', {
      message: THROTTLE_MESSAGE,
      throttlingReasons: [
        {
          reason: write ? 'TableWriteKeyRangeThroughputExceeded' : 'TableReadKeyRangeThroughputExceeded',
          resource: `arn:aws:dynamodb:us-east-1:000000000000:table/${table ?? ''}`,
        },
      ],
    });
  }

  private reject(op: string, cause: 'conflict' | 'throttle', type: Rejection['type'], fields: Json): Verdict {
    const bucket = cause === 'conflict' ? this.counts.conflicts : this.counts.throttled;
    bucket[op] = (bucket[op] ?? 0) + 1;
    return { forward: false, rejection: { type, cause, body: { __type: `${NS}${type}`, ...fields } } };
  }

  /**
   * A batch with its throttled keys taken out (drawn per partition key, so the keys of one partition share their
   * fate), handed back in the answer as DynamoDB does; every key throttled is a ThrottlingException.
   */
  private batch(
    op: string,
    ticket: number,
    body: Json,
    field: 'UnprocessedKeys' | 'UnprocessedItems',
  ): Verdict {
    const sent: Json = {};
    const back: Json = {};
    let kept = 0;
    for (const [table, spec] of Object.entries(body.RequestItems ?? {}) as [string, Json][]) {
      const entries: Json[] = field === 'UnprocessedKeys' ? spec.Keys : (spec as unknown as Json[]);
      const fate = new Map<string, boolean>();
      const keep: Json[] = [];
      const give: Json[] = [];
      for (const e of entries) {
        const key =
          field === 'UnprocessedKeys'
            ? e
            : e.PutRequest
              ? this.keyOf(table, e.PutRequest.Item)
              : e.DeleteRequest?.Key;
        const partition = this.ref(table, key).partition;
        if (!fate.has(partition)) fate.set(partition, this.drawn());
        (fate.get(partition) ? give : keep).push(e);
      }
      kept += keep.length;
      const wrap = (list: Json[]) => (field === 'UnprocessedKeys' ? { ...spec, Keys: list } : list);
      if (keep.length) sent[table] = wrap(keep);
      if (give.length) back[table] = wrap(give);
    }
    if (Object.keys(back).length === 0) return { forward: true, ticket };
    if (kept === 0) return this.throttled(op, Object.keys(back)[0], field === 'UnprocessedItems');
    const bucket = this.counts.throttled;
    bucket[op] = (bucket[op] ?? 0) + 1;
    return {
      forward: true,
      ticket,
      body: { ...body, RequestItems: sent },
      unprocessed: { field, value: back },
    };
  }

  private drawn(): boolean {
    return this.settings.throttleShare > 0 && this.random() < this.settings.throttleShare;
  }

  private heldBy(id: string, kinds: Holder[]): boolean {
    const t = this.now();
    return (this.holds.get(id) ?? []).some(
      (h) => kinds.includes(h.kind) && t - h.since < this.settings.windowMs,
    );
  }

  private hold(ticket: number, items: ItemRef[], kind: Holder): void {
    if (!this.settings.modes.has('conflicts') || items.length === 0) return;
    this.expire();
    const since = this.now();
    const ids = [...new Set(items.map((i) => i.id))];
    for (const id of ids) this.holds.set(id, [...(this.holds.get(id) ?? []), { ticket, kind, since }]);
    this.byTicket.set(ticket, ids);
  }

  /** Drops holds older than the window, so a request DynamoDB Local never answers holds nothing for long. */
  private expire(): void {
    const t = this.now();
    for (const [id, list] of this.holds) {
      const live = list.filter((h) => t - h.since < this.settings.windowMs);
      if (live.length === list.length) continue;
      if (live.length) this.holds.set(id, live);
      else this.holds.delete(id);
    }
  }

  /** The item's key attributes as written in a Put (which names the whole item). */
  private keyOf(table: string, item: Json | undefined): Json {
    const names = this.schemaOf(table).keys;
    return Object.fromEntries(names.filter((n) => item?.[n] !== undefined).map((n) => [n, item?.[n]]));
  }

  private ref(table: string, key: Json | undefined): ItemRef {
    const names = this.schemaOf(table).keys;
    const values = names.map((n) => canonical(key?.[n] as AttributeValue | undefined));
    return {
      table,
      id: `${table}\u0000${values.join('\u0000')}`,
      partition: `${table}\u0000${values[0] ?? ''}`,
    };
  }
}

/** An attribute value as text that is equal for equal values (`{"S":"x"}` and the like have one member). */
function canonical(v: AttributeValue | undefined): string {
  if (!v) return '';
  const [type, value] = Object.entries(v)[0] ?? ['', ''];
  return `${type}:${typeof value === 'string' ? value : JSON.stringify(value)}`;
}
