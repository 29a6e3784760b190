/**
 * The wake latch's attributes (functions/orchestration/wake-latch.ts) live on their own item, RE#<release> / RE#L,
 * not on the release item. The release item is in three indexes that project the whole item (the list, the state
 * filter and the active index), so each latch write there cost its table write and three index writes; the poll
 * loop arms a wait every round and PhaseWatch wakes a release as its tasks report, which made the latch the largest
 * writer after the callbacks themselves. The latch item has no index keys: one write unit per latch write.
 *
 * To the orchestration nothing changes: they are still extras of the release (OrchestrationState), read with it
 * (the release's Query covers RE..RN~, and RE#L sorts inside it) and changed one atomic UpdateItem at a time.
 *
 * Releases in flight when this layout arrived keep their latch on the release item until their first latch write:
 * that write finds no latch item, reads the release item once, takes its latch attributes as the previous values and
 * moves them off it. Until then the reconciler sees them as before (the release item's extras), so a wait armed by the
 * earlier code is still answered.
 */
import { K } from '../common.js';
import { DeleteCommand, GetCommand, UpdateCommand } from '../documents.js';
import type { LabelledItem } from '../transact.js';
import { LATCH_EXTRAS, latchOf } from './items.js';
import type { ReleaseTable } from './table.js';
import { setAndRemove } from './update-expression.js';

export { LATCH_EXTRAS };

/** Whether every extra a change names is a latch attribute (true), none is (false); both at once is a caller's bug. */
export function isLatchChange(names: readonly string[]): boolean {
  const latch = names.filter((n) => LATCH_EXTRAS.has(n));
  if (latch.length && latch.length !== names.length)
    throw new Error(`one write changes the wake latch or other extras, not both: ${names.join(', ')}`);
  return latch.length > 0;
}

/**
 * One atomic UpdateItem of the latch item, returning the latch before it (null: no such release). `order` as in
 * exchangeExtrasInOrder: the write happens only while `order.name` is absent or sorts at most as high.
 */
export async function exchangeLatch(
  t: ReleaseTable,
  id: string,
  update: { expr: string; names: Record<string, string>; values: Record<string, unknown> },
  order?: { name: string; value: string },
): Promise<Record<string, unknown> | null | 'superseded'> {
  let condition: string | undefined;
  const names = { ...update.names };
  const values = { ...update.values };
  if (order) {
    names['#o'] = order.name;
    values[':o'] = order.value;
    condition = 'attribute_not_exists(#o) OR #o <= :o';
  }
  let before: Record<string, unknown> | undefined;
  try {
    const out = await t.doc.send(
      new UpdateCommand({
        TableName: t.table,
        Key: K.releaseLatch(id),
        UpdateExpression: update.expr,
        ConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: Object.keys(values).length ? values : undefined,
        ReturnValues: 'ALL_OLD',
      }),
    );
    before = out.Attributes;
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    return 'superseded';
  }
  if (before) return latchOf(before);
  return firstLatchWrite(t, id);
}

/**
 * The latch item did not exist before this write: either the release's first latch write, or a write for a release
 * that does not exist. One read of the release item tells them apart; the stray latch item of a missing release is
 * removed again, and the latch attributes an earlier layout left on the release item are moved off it (their values
 * answer as the previous ones, so a pending wake or a waiting token is not lost).
 */
async function firstLatchWrite(t: ReleaseTable, id: string): Promise<Record<string, unknown> | null> {
  const got = await t.doc.send(
    new GetCommand({ TableName: t.table, Key: K.release(id), ConsistentRead: true }),
  );
  if (!got.Item) {
    // Only this write made it: no release item, so nothing else writes under this partition.
    await t.doc.send(new DeleteCommand({ TableName: t.table, Key: K.releaseLatch(id) }));
    return null;
  }
  const legacy = latchOf(got.Item);
  const names = Object.keys(legacy);
  if (names.length) {
    await t.doc
      .send(
        new UpdateCommand({
          TableName: t.table,
          Key: K.release(id),
          UpdateExpression: `REMOVE ${names.map((_, i) => `#l${i}`).join(', ')}`,
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#l${i}`, n])),
        }),
      )
      .catch((err: Error) => {
        if (err.name !== 'ConditionalCheckFailedException') throw err;
      });
  }
  return legacy;
}

/** The latch part of a release change, as a transaction item (no condition: the change's other items hold them). */
export function latchTxItem(
  t: ReleaseTable,
  id: string,
  set: Record<string, unknown>,
  remove: readonly string[],
): LabelledItem | null {
  const { expr, names, values } = setAndRemove(set, remove, { set: 'l', remove: 'm' });
  if (!expr) return null;
  return {
    kind: 'latch',
    id,
    item: {
      Update: {
        TableName: t.table,
        Key: K.releaseLatch(id),
        UpdateExpression: expr,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: Object.keys(values).length ? values : undefined,
      },
    },
  };
}
