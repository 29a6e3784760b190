import { K } from '../common.js';
import { GetCommand, UpdateCommand } from '../documents.js';
import { MAX_EXTRA_BYTES, valueBytes } from '../item-size.js';
import { extrasOf, LATCH_EXTRAS, latchOf, RESERVED } from './items.js';
import { exchangeLatch, isLatchChange } from './latch.js';
import { batchGet, type ReleaseTable } from './table.js';
import { setAndRemove } from './update-expression.js';

/**
 * Orchestration extras: attributes of the release that are not Release fields (the wake latch's token and flag, the
 * execution generation, ...). Only the orchestration gives them meaning; here each is one atomic write. They live on
 * the release item, except the wake latch's, which have an item of their own (latch.ts).
 */

export function checkExtraNames(names: string[]): void {
  for (const n of names) {
    if (RESERVED.has(n)) throw new Error(`"${n}" is a Release field or key, not an orchestration extra`);
  }
}

/** Orchestration attributes share the room kept free on the release item (item-size.ts); each stays small. */
export function checkExtraSizes(extras: Record<string, unknown> | undefined): void {
  for (const [k, v] of Object.entries(extras ?? {})) {
    if (valueBytes(v) > MAX_EXTRA_BYTES)
      throw new Error(`orchestration attribute "${k}" is larger than ${MAX_EXTRA_BYTES} bytes`);
  }
}

/** Sets and removes extras in one UpdateItem and returns what they were before (ALL_OLD); null: no such release. */
export async function exchangeExtras(
  t: ReleaseTable,
  id: string,
  change: { set?: Record<string, unknown>; remove?: string[] },
): Promise<Record<string, unknown> | null> {
  const out = await exchange(t, id, change);
  return out === 'superseded' ? null : out;
}

/**
 * As exchangeExtras, and sets the string extra `order.name` to `order.value`, but only while it is absent or sorts at
 * most as high (DynamoDB compares strings by their UTF-8 bytes): a writer that arrives after a newer one (a late
 * wait token) changes nothing, and learns 'superseded'.
 */
export async function exchangeExtrasInOrder(
  t: ReleaseTable,
  id: string,
  change: { set?: Record<string, unknown>; remove?: string[] },
  order: { name: string; value: string },
): Promise<Record<string, unknown> | null | 'superseded'> {
  return exchange(t, id, { ...change, set: { ...change.set, [order.name]: order.value } }, order);
}

async function exchange(
  t: ReleaseTable,
  id: string,
  change: { set?: Record<string, unknown>; remove?: string[] },
  order?: { name: string; value: string },
): Promise<Record<string, unknown> | null | 'superseded'> {
  const remove = change.remove ?? [];
  const named = [...Object.keys(change.set ?? {}), ...remove];
  checkExtraNames(named);
  checkExtraSizes(change.set);
  const { expr, names, values } = setAndRemove(change.set ?? {}, remove, { set: 's', remove: 'r' });
  if (!expr) {
    const [item, latch] = await readBoth(t, id);
    return item ? { ...extrasOf(item), ...latchOf(latch) } : null;
  }
  if (isLatchChange([...named, ...(order ? [order.name] : [])]))
    return exchangeLatch(t, id, { expr, names, values }, order);
  // An update creates a missing item: without attribute_exists, a latch write for a deleted or mistyped release
  // would leave a stray item holding only extras.
  let condition = 'attribute_exists(pk)';
  if (order) {
    names['#o'] = order.name;
    values[':o'] = order.value;
    condition += ' AND (attribute_not_exists(#o) OR #o <= :o)';
  }
  try {
    const out = await t.doc.send(
      new UpdateCommand({
        TableName: t.table,
        Key: K.release(id),
        UpdateExpression: expr,
        ConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: Object.keys(values).length ? values : undefined,
        ReturnValues: 'ALL_OLD',
        // Tells a missing release from a newer writer without a second read.
        ReturnValuesOnConditionCheckFailure: order ? 'ALL_OLD' : undefined,
      }),
    );
    return extrasOf(out.Attributes ?? {});
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    if (!order) return null;
    return (err as { Item?: unknown }).Item ? 'superseded' : null;
  }
}

/** Raises a numeric extra to `to` unless it already is at least that; the value it holds afterwards (null: none). */
export async function raiseExtra(
  t: ReleaseTable,
  id: string,
  name: string,
  to: number,
): Promise<number | null> {
  checkExtraNames([name]);
  try {
    await t.doc.send(
      new UpdateCommand({
        TableName: t.table,
        Key: K.release(id),
        UpdateExpression: 'SET #n = :to',
        // Only up, never down (the execution generation: whoever raises it first owns that generation), and never
        // on a release that does not exist (the update would create a stray item).
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(#n) OR #n < :to)',
        ExpressionAttributeNames: { '#n': name },
        ExpressionAttributeValues: { ':to': to },
      }),
    );
    return to;
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
  }
  // Missing, or already at least `to`: say which.
  const got = await t.doc.send(
    new GetCommand({ TableName: t.table, Key: K.release(id), ConsistentRead: true }),
  );
  if (!got.Item) return null;
  const value = got.Item[name];
  return typeof value === 'number' ? value : 0;
}

/** The release item and its latch item (either undefined where missing), strongly consistent. */
async function readBoth(t: ReleaseTable, id: string) {
  const items = await batchGet(t, [K.release(id), K.releaseLatch(id)]);
  return [items.find((i) => i.sk === K.release(id).sk), items.find((i) => i.sk === K.releaseLatch(id).sk)];
}

/**
 * Removes an extra only while it still holds `value`. A latch attribute is looked for on the latch item, then on the
 * release item, where a release in flight when the latch moved may still hold it (latch.ts).
 */
export async function removeExtraIf(
  t: ReleaseTable,
  id: string,
  name: string,
  value: unknown,
): Promise<void> {
  checkExtraNames([name]);
  if (LATCH_EXTRAS.has(name) && (await removeIf(t, K.releaseLatch(id), name, value))) return;
  await removeIf(t, K.release(id), name, value);
}

async function removeIf(
  t: ReleaseTable,
  key: Record<string, string>,
  name: string,
  value: unknown,
): Promise<boolean> {
  try {
    await t.doc.send(
      new UpdateCommand({
        TableName: t.table,
        Key: key,
        UpdateExpression: 'REMOVE #n',
        // A newer writer may have replaced the value (a fresh wait token): then it is theirs, and stays.
        ConditionExpression: '#n = :v',
        ExpressionAttributeNames: { '#n': name },
        ExpressionAttributeValues: { ':v': value },
      }),
    );
    return true;
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    return false;
  }
}
