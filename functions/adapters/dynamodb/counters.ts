import { BatchGetCommand, type Documents } from './documents.js';
import { backoff, type LabelledItem } from './transact.js';

/**
 * Counts kept in counter items (`CNT#<name>#<shard>` / `CNT`), moved with ADD inside the very transaction that adds,
 * moves or removes what they count, so a count never drifts from its list (re-exported by common.ts; the names are
 * `C` there). A hot count is split over `shards` items: a write picks one, a read sums them in one BatchGetItem, so
 * concurrent transactions rarely meet on one item and no item takes more than its share of the writes.
 *
 * Several counts may share one item, each in an attribute of its own (`attr`; `n` when none is named): a transaction
 * that moves several of them then writes that item once, with one ADD per attribute. The counts every task callback
 * moves (all events, the tasks in the state left and in the state reached) share one item this way.
 */
export interface Counter {
  /** The counter item's name (its key: counterKey). */
  name: string;
  shards: number;
  /** The attribute that holds this count on the item (default `n`). */
  attr?: string;
}

export const COUNT_ATTRIBUTE = 'n';
const attrOf = (c: Counter) => c.attr ?? COUNT_ATTRIBUTE;

export const counterKey = (name: string, shard: number) => ({
  pk: `CNT#${name}#${String(shard).padStart(2, '0')}`,
  sk: 'CNT',
});

/**
 * Deltas of one change, merged per count; `items()` gives one Update per counter item that moves (an ADD per count
 * it holds), on a random shard unless a delta named one (`shard`, taken modulo the counter's shards: the first
 * named for the item wins).
 */
export class CounterDeltas {
  private readonly deltas = new Map<string, { counter: Counter; delta: number; shard?: number }>();
  add(counter: Counter | null | undefined, delta: number, shard?: number): this {
    if (!counter || delta === 0) return this;
    const key = `${counter.name}\u0000${attrOf(counter)}`;
    const current = this.deltas.get(key);
    this.deltas.set(key, {
      counter,
      delta: (current?.delta ?? 0) + delta,
      shard: current ? current.shard : shard,
    });
    return this;
  }

  /** The non-zero deltas, by counter item. */
  private byItem(): Map<string, { counter: Counter; delta: number; shard?: number }[]> {
    const out = new Map<string, { counter: Counter; delta: number; shard?: number }[]>();
    for (const d of this.deltas.values())
      if (d.delta !== 0) out.set(d.counter.name, [...(out.get(d.counter.name) ?? []), d]);
    return out;
  }

  items(table: string): LabelledItem[] {
    return [...this.byItem()].map(([name, deltas]) => {
      const shards = Math.max(...deltas.map((d) => d.counter.shards));
      const named = deltas.find((d) => d.shard !== undefined)?.shard;
      const shard = named === undefined ? Math.floor(Math.random() * shards) : named % shards;
      return {
        kind: 'counter',
        id: name,
        item: {
          Update: {
            TableName: table,
            Key: counterKey(name, shard),
            UpdateExpression: `ADD ${deltas.map((_, i) => `#c${i} :c${i}`).join(', ')}`,
            ExpressionAttributeNames: Object.fromEntries(deltas.map((d, i) => [`#c${i}`, attrOf(d.counter)])),
            ExpressionAttributeValues: Object.fromEntries(deltas.map((d, i) => [`:c${i}`, d.delta])),
          },
        },
      };
    });
  }

  /** How many counter items `items()` writes. */
  get size(): number {
    return this.byItem().size;
  }
}

/**
 * Items by key, in strongly consistent BatchGetItems of at most 100 keys sent together, unprocessed keys (DynamoDB
 * hands back what it throttled) asked again after a short, growing pause. Missing items are left out.
 */
export async function batchGetItems(
  doc: Documents,
  table: string,
  keys: readonly Record<string, unknown>[],
): Promise<Record<string, unknown>[]> {
  const chunks: Record<string, unknown>[][] = [];
  for (let i = 0; i < keys.length; i += 100) chunks.push(keys.slice(i, i + 100));
  const got = await Promise.all(
    chunks.map(async (chunk) => {
      const out: Record<string, unknown>[] = [];
      let pending: Record<string, unknown>[] | undefined = chunk;
      for (let attempt = 0; pending?.length; attempt++) {
        if (attempt > 0) await backoff(attempt);
        const res = await doc.send(
          new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true } } }),
        );
        out.push(...((res.Responses?.[table] ?? []) as Record<string, unknown>[]));
        pending = res.UnprocessedKeys?.[table]?.Keys as Record<string, unknown>[] | undefined;
      }
      return out;
    }),
  );
  return got.flat();
}

/** The keys of every shard of the counters' items, each item once. */
export function counterKeys(counters: readonly Counter[]): { pk: string; sk: string }[] {
  const shards = new Map<string, number>();
  for (const c of counters) shards.set(c.name, Math.max(shards.get(c.name) ?? 0, c.shards));
  return [...shards].flatMap(([name, n]) => Array.from({ length: n }, (_, i) => counterKey(name, i)));
}

/** A count as the counter items read hold it: the sum of its attribute over the shards given. */
export function sumCount(items: readonly Record<string, unknown>[], counter: Counter): number {
  const prefix = `CNT#${counter.name}#`;
  let total = 0;
  for (const item of items) {
    const pk = String(item.pk);
    if (!pk.startsWith(prefix) || !/^\d+$/.test(pk.slice(prefix.length))) continue;
    const n = item[attrOf(counter)];
    if (typeof n === 'number') total += n;
  }
  return total;
}

/** Reads counts: every shard of every counter item in strongly consistent BatchGetItems (batchGetItems). */
export async function readCounts(
  doc: Documents,
  table: string,
  counters: readonly Counter[],
): Promise<number[]> {
  const items = await batchGetItems(doc, table, counterKeys(counters));
  return counters.map((c) => sumCount(items, c));
}

export async function readCount(doc: Documents, table: string, counter: Counter): Promise<number> {
  return (await readCounts(doc, table, [counter]))[0];
}
