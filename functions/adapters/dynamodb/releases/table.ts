import type { Clock } from '#functions/shared/clock.js';
import type * as z from '#functions/shared/zod.js';
import { batchGetItems, decode, K, queryAll, type Tables } from '../common.js';
import { type Documents, GetCommand, QueryCommand } from '../documents.js';

/**
 * What every action of the release store works with: the client, the tables and the clock that stamps new records.
 * The actions (reads.ts, creation.ts, changes.ts, ...) are functions of this, so each file holds one concern and
 * DynamoReleaseRepository (index.ts) only lists them.
 */
export interface ReleaseTable {
  readonly doc: Documents;
  readonly tables: Tables;
  readonly clock: Clock;
  /** The coordinator table, where releases, tasks and notes live. */
  readonly table: string;
}

/** Items of the release store's table by key (batchGetItems: consistent, unprocessed keys asked again). */
export function batchGet(
  t: ReleaseTable,
  keys: Record<string, string>[],
): Promise<Record<string, unknown>[]> {
  return batchGetItems(t.doc, t.table, keys);
}

/** The items of one release collection whose sort key starts with `prefix` (TA#: its tasks, RN#: its notes). */
export function collection(t: ReleaseTable, releaseId: string, prefix: string) {
  return queryAll(t.doc, {
    TableName: t.table,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': K.releasePk(releaseId), ':prefix': prefix },
    ConsistentRead: true,
  });
}

/** The index entry of a task (TA) or note (RN) by its own id (gsi2), or null. */
export async function findById(
  t: ReleaseTable,
  id: string,
  type: 'TA' | 'RN',
): Promise<Record<string, unknown> | null> {
  const out = await t.doc.send(
    new QueryCommand({
      TableName: t.table,
      IndexName: 'gsi2',
      KeyConditionExpression: 'gsi2pk = :id AND gsi2sk = :t',
      ExpressionAttributeValues: { ':id': id, ':t': type },
    }),
  );
  return (out.Items?.[0] as Record<string, unknown> | undefined) ?? null;
}

/** Finds an item through the id index, then reads the item itself: the index is only eventually consistent. */
export async function getById<S extends z.core.$ZodType>(
  t: ReleaseTable,
  id: string,
  type: 'TA' | 'RN',
  schema: S,
): Promise<z.output<S> | null> {
  const found = await findById(t, id, type);
  if (!found) return null;
  const got = await t.doc.send(
    new GetCommand({ TableName: t.table, Key: { pk: found.pk, sk: found.sk }, ConsistentRead: true }),
  );
  return got.Item ? decode(schema, got.Item) : null;
}
