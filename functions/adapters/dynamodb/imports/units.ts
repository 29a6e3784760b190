import type { StoreOutcome } from '#functions/coordinator/import/ports.js';
import { batchGetItems, CounterDeltas, K, type LabelledItem, type Tables, transact } from '../common.js';
import type { Documents } from '../documents.js';

/**
 * How the import writes: each record is a unit (its items and its counts), written only if its id is free. A batch
 * first reads the units' keys (strongly consistent BatchGetItems), so a record imported before costs a read, not a
 * cancelled transaction; the rest are packed into TransactWriteItems of at most 100 items, their counts merged per
 * counter (CounterDeltas) and written in the same transaction as what they count, so a list's count never drifts
 * from what paging finds, even when the import is cut off between two transactions. Every put keeps its condition,
 * and a record another writer took meanwhile comes back (ALL_OLD) and is judged as the read would have judged it.
 */

/** The budget of one transaction: DynamoDB's 100 items. */
const MAX_ITEMS = 100;

export interface Unit {
  /** The record's id, as reported. */
  id: string;
  /** The label of its first item, the record itself (`kind` of that LabelledItem). */
  kind: string;
  /** The table and key of that item, read to tell whether the record is here. */
  table: string;
  key: Record<string, string>;
  /** What holds the key: the same record (present) or another one (taken). */
  judge(existing: Record<string, unknown>): 'present' | 'taken';
  /** The unit's items, the record's own first (built anew for every attempt: generated events draw fresh ids). */
  items(): LabelledItem[];
  /** Its counts: in the coordinator table, in the studies table, and the registry's tasks per service. */
  counts?(coordinator: CounterDeltas, studies: CounterDeltas, registry: Map<string, number>): void;
  /** The unit whose record it belongs under: when that one is taken, this one is too, and is never written. */
  parent?: Unit;
  /**
   * Items of other records the unit updates (a note adds itself to its release's list): a transaction holds at most
   * one unit per such item, since DynamoDB refuses two operations on one item in one transaction.
   */
  touches?: string[];
  /** Called when an item of its own other than the record fails its condition; true: retry without it. */
  onFailed?(kind: string, existing: Record<string, unknown> | undefined): boolean;
  /** Notes for the outcome (set by onFailed, or before the write). */
  notes?: string[];
}

/** Same record: same id (the key) and same creation time. */
export const sameCreation =
  (createdAt: string | null) =>
  (existing: Record<string, unknown>): 'present' | 'taken' =>
    (existing.createdAt ?? null) === createdAt ? 'present' : 'taken';

const keyOf = (table: string, key: Record<string, string>) => `${table}|${key.pk}|${key.sk}`;

/**
 * The put of a unit's own record: written only where its key is free, and when it is not, the item that holds the
 * key comes back with the cancellation (ALL_OLD), so the unit is judged present or taken without another read.
 */
export function recordPut(
  table: string,
  kind: string,
  id: string,
  Item: Record<string, unknown>,
): LabelledItem {
  return {
    kind,
    id,
    item: {
      Put: {
        TableName: table,
        Item,
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
  };
}

/** The transaction items of some units: theirs, then one ADD per counter moved, then the registry's adds. */
function transactionItems(units: readonly Unit[], tables: Tables): LabelledItem[] {
  const coordinator = new CounterDeltas();
  const studies = new CounterDeltas();
  const registry = new Map<string, number>();
  const items = units.flatMap((u) => u.items());
  for (const u of units) u.counts?.(coordinator, studies, registry);
  items.push(...coordinator.items(tables.coordinator), ...studies.items(tables.studies));
  if (registry.size) {
    const names = [...registry.keys()];
    items.push({
      kind: 'registry',
      id: 'registry',
      item: {
        Update: {
          TableName: tables.coordinator,
          Key: K.registry(),
          // How many tasks each service was given (GET /tasks?task_service= counts): the registry item's
          // `tasks:<service>` attributes, as release creation moves them.
          UpdateExpression: `ADD ${names.map((_, i) => `#t${i} :n${i}`).join(', ')}`,
          ExpressionAttributeNames: Object.fromEntries(
            names.map((s, i) => [`#t${i}`, K.serviceTaskCount(s)]),
          ),
          ExpressionAttributeValues: Object.fromEntries(names.map((s, i) => [`:n${i}`, registry.get(s)])),
        },
      },
    });
  }
  return items;
}

/**
 * The next units that fit one transaction, in order, passing over a unit that updates an item another one of the
 * transaction updates (at least one: a unit never exceeds the budget alone).
 */
function pack(queue: readonly Unit[], tables: Tables): Unit[] {
  const taken: Unit[] = [];
  const touched = new Set<string>();
  for (const u of queue) {
    if (u.touches?.some((t) => touched.has(t))) continue;
    if (transactionItems([...taken, u], tables).length > MAX_ITEMS) break;
    taken.push(u);
    for (const t of u.touches ?? []) touched.add(t);
  }
  return taken.length ? taken : queue.slice(0, 1);
}

/**
 * Writes the units that are not here; `dryRun` stops after the read, and `unread` skips it (the caller has just read
 * them). Outcomes come in the units' order. A unit whose parent is taken is taken too; a unit whose parent is
 * present is still written when it is missing (a run cut off between the two finishes it).
 */
export async function writeUnits(
  doc: Documents,
  tables: Tables,
  units: readonly Unit[],
  dryRun: boolean,
  unread = false,
): Promise<StoreOutcome[]> {
  const status = new Map<Unit, StoreOutcome['status']>();
  const existing = new Map<string, Record<string, unknown>>();
  const byTable = new Map<string, Map<string, Record<string, string>>>();
  for (const u of unread ? [] : units) {
    const keys = byTable.get(u.table) ?? new Map<string, Record<string, string>>();
    keys.set(keyOf(u.table, u.key), u.key);
    byTable.set(u.table, keys);
  }
  for (const [table, keys] of byTable)
    for (const item of await batchGetItems(doc, table, [...keys.values()]))
      existing.set(keyOf(table, { pk: String(item.pk), sk: String(item.sk) }), item);
  const orphan = (u: Unit) => u.parent !== undefined && status.get(u.parent) === 'taken';
  let queue: Unit[] = [];
  for (const u of units) {
    const found = existing.get(keyOf(u.table, u.key));
    if (orphan(u)) status.set(u, 'taken');
    else if (found) status.set(u, u.judge(found));
    else if (dryRun) status.set(u, 'written');
    else queue.push(u);
  }
  while (queue.length) {
    const batch = pack(queue, tables);
    const out = await transact(doc, transactionItems(batch, tables));
    if (out.ok) {
      for (const u of batch) status.set(u, 'written');
      queue = queue.filter((u) => !batch.includes(u));
      continue;
    }
    if (out.conditionFailed.length === 0)
      throw new Error('the import kept meeting concurrent writes; run it again');
    let moved = false;
    for (const f of out.conditionFailed) {
      const u = batch.find((x) => x.id === f.id && x.kind === f.kind);
      const owner = u ?? batch.find((x) => x.items().some((i) => i.kind === f.kind && i.id === f.id));
      if (!owner) continue;
      moved = true;
      if (u) status.set(u, f.item ? u.judge(f.item) : 'taken');
      else if (!owner.onFailed?.(f.kind, f.item)) status.set(owner, 'taken');
    }
    // A condition that failed on an item no unit owns would fail again the same way.
    if (!moved)
      throw new Error(`an import write failed on ${out.conditionFailed.map((f) => f.kind).join(', ')}`);
    for (const u of queue) if (!status.has(u) && orphan(u)) status.set(u, 'taken');
    queue = queue.filter((u) => !status.has(u));
  }
  return units.map((u) => ({
    id: u.id,
    status: status.get(u) ?? 'taken',
    ...(u.notes?.length ? { notes: u.notes } : {}),
  }));
}
