import { unmarshall } from '@aws-sdk/util-dynamodb';
import { itemBytes } from '#functions/adapters/dynamodb/item-size.js';

/**
 * DynamoDB's capacity units, computed from the requests the handlers send and the items before and after: how the
 * meter turns DynamoDB Local's traffic into what DynamoDB bills.
 */

/** An item as DynamoDB's protocol carries it: attribute name to AttributeValue ({S}, {N}, {M}, ...). */
export type WireItem = Record<string, any>;

export interface WriteTarget {
  table: string;
  key: WireItem;
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

/** Binary values arrive as base64 text in the JSON protocol, and as bytes from the SDK: both become bytes. */
function decodeBinary(v: any): any {
  if (!v || typeof v !== 'object') return v;
  if (typeof v.B === 'string') return { B: Buffer.from(v.B, 'base64') };
  if (Array.isArray(v.BS))
    return { BS: v.BS.map((b: unknown) => (typeof b === 'string' ? Buffer.from(b, 'base64') : b)) };
  if (Array.isArray(v.L)) return { L: v.L.map(decodeBinary) };
  if (v.M && typeof v.M === 'object')
    return { M: Object.fromEntries(Object.entries(v.M).map(([k, x]) => [k, decodeBinary(x)])) };
  return v;
}

/**
 * DynamoDB's size of an item in its protocol form, by the store's own estimator (functions/adapters/dynamodb/
 * item-size.ts) on the item unmarshalled with its numbers kept as decimal text.
 */
export function itemSize(item: WireItem | undefined): number {
  if (!item) return 0;
  const decoded = Object.fromEntries(Object.entries(item).map(([k, v]) => [k, decodeBinary(v)]));
  return itemBytes(unmarshall(decoded, { wrapNumbers: true }));
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
  const keyOf = (table: string, item: WireItem) =>
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
function projected(item: WireItem | undefined, index: IndexSchema, tableKeys: string[]) {
  if (!item || index.projection === 'ALL') return item;
  const names = new Set([
    ...tableKeys,
    ...index.keys,
    ...(index.projection === 'INCLUDE' ? index.include : []),
  ]);
  return Object.fromEntries(Object.entries(item).filter(([k]) => names.has(k)));
}

/**
 * Write units of one item's write, from its images before and after: the table's write in 1 KB steps of the larger
 * image, twice within a transaction (DynamoDB prepares and commits every item of a TransactWriteItems); and one write
 * per global secondary index entry added, updated or removed (a changed index key is a removal and an addition), sized
 * by what the index projects, never doubled: a transaction's changes reach the indexes after it commits, as any
 * write's do (docs/cost.md, "How the usage is measured"). An index whose projected part did not change is not written. A
 * condition check is billed as a write of the item it checks.
 */
export function writeUnits(
  target: WriteTarget,
  before: WireItem | undefined,
  after: WireItem | undefined,
  schema: TableSchema = { keys: [], indexes: [] },
  transactional = false,
): number {
  const table = kb(Math.max(itemSize(before), itemSize(after))) * (transactional ? 2 : 1);
  if (target.kind === 'check') return table;
  let units = table;
  for (const index of schema.indexes) {
    const keyOf = (item?: WireItem) =>
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

/** What AWS bills a write refused by its condition: the existing item's size, at least one unit. */
export function refusedWriteUnits(existing: WireItem | undefined): number {
  return Math.max(1, Math.ceil(itemSize(existing) / 1024));
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

/**
 * The least a read is billed, for when DynamoDB Local reports less (it reports 0 for a query that matches nothing):
 * 2 units for a transactional read, 1 for a strongly consistent read of a table, 0.5 otherwise.
 */
export function leastReadUnits(op: string, body: any): number {
  if (op === 'TransactGetItems') return 2;
  return body?.ConsistentRead === true && !body?.IndexName ? 1 : 0.5;
}
