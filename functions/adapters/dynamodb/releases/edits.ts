import type { Release, ReleaseAggregate } from '#functions/coordinator/model.js';
import { K } from '../common.js';
import { GetCommand, UpdateCommand } from '../documents.js';
import { assertFits, RELEASE_RECORD_BUDGET } from '../item-size.js';
import { load } from './reads.js';
import type { ReleaseTable } from './table.js';

/**
 * Changes the release's descriptive fields (PATCH /releases/<id>): never its state, which only changes.ts moves.
 * Null when the release does not exist.
 */
export async function update(
  t: ReleaseTable,
  id: string,
  patch: Partial<Pick<Release, 'name' | 'description' | 'tags'>>,
): Promise<ReleaseAggregate | null> {
  const entries = Object.entries(patch).filter(([, v]) => v !== undefined);
  if (entries.length) {
    // The release item must keep its room for the orchestration: size what it would become before writing.
    const current = await t.doc.send(
      new GetCommand({ TableName: t.table, Key: K.release(id), ConsistentRead: true }),
    );
    if (!current.Item) return null;
    assertFits({ ...current.Item, ...Object.fromEntries(entries) }, RELEASE_RECORD_BUDGET, 'release');
    try {
      await t.doc.send(
        new UpdateCommand({
          TableName: t.table,
          Key: K.release(id),
          UpdateExpression: `SET ${entries.map((_, i) => `#u${i} = :u${i}`).join(', ')}`,
          // UpdateItem creates a missing item: the write itself refuses an unknown id (a 404), whatever was read.
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: Object.fromEntries(entries.map(([k], i) => [`#u${i}`, k])),
          ExpressionAttributeValues: Object.fromEntries(entries.map(([, v], i) => [`:u${i}`, v])),
        }),
      );
    } catch (err) {
      if ((err as Error).name === 'ConditionalCheckFailedException') return null;
      throw err;
    }
  }
  return load(t, id);
}
