import { isTerminalRelease, type Release, releaseSchema } from '#functions/coordinator/model.js';
import { decode, K, queryAll } from '../common.js';
import { UpdateCommand } from '../documents.js';
import { extrasOf, LATCH_SK, latchOf } from './items.js';
import { batchGet, type ReleaseTable } from './table.js';

/**
 * The active index: the sparse gsi2 partition ACTIVE#RE that holds exactly the releases that are not terminal (the
 * state change that ends a release removes its keys, changes.ts). The reconciler and the health check read only
 * this, so their cost follows the work in flight, not history (common.ts has the layout).
 */

/** The release items in the active index (eventually consistent: a release that just ended may still be there). */
export function activeReleaseItems(t: ReleaseTable): Promise<Record<string, unknown>[]> {
  return queryAll(t.doc, {
    TableName: t.table,
    IndexName: 'gsi2',
    KeyConditionExpression: 'gsi2pk = :p',
    ExpressionAttributeValues: { ':p': K.ACTIVE_RELEASES },
  });
}

export async function listActive(
  t: ReleaseTable,
): Promise<{ release: Release; extras: Record<string, unknown> }[]> {
  const items = await activeReleaseItems(t);
  const active = items
    .map((item) => ({ release: decode(releaseSchema, item), extras: extrasOf(item) }))
    // The index lags the table: a release that just ended may still be listed.
    .filter((a) => !isTerminalRelease(a.release.state));
  // Their wake latches (latch.ts), one BatchGetItem per 100; a latch's values win over any left on the release item.
  const latches = new Map(
    (
      await batchGet(
        t,
        active.map((a) => K.releaseLatch(a.release.id)),
      )
    )
      .filter((i) => i.sk === LATCH_SK)
      .map((i) => [String(i.pk), latchOf(i)]),
  );
  return active.map((a) => ({
    release: a.release,
    extras: { ...a.extras, ...latches.get(K.releasePk(a.release.id)) },
  }));
}

/**
 * Puts every non-terminal release that is missing from the active index into it. Releases written before the
 * index existed need this once (the local stack runs it at start-up; on AWS an operator runs it, see
 * docs/orchestration.md). It reads every release, so it is not for a schedule.
 */
export async function indexActiveReleases(t: ReleaseTable): Promise<string[]> {
  const items = await queryAll(t.doc, {
    TableName: t.table,
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :p',
    FilterExpression: 'attribute_not_exists(gsi2pk)',
    ExpressionAttributeValues: { ':p': 'RE' },
  });
  const added: string[] = [];
  for (const r of items.map((i) => decode(releaseSchema, i))) {
    if (isTerminalRelease(r.state)) continue;
    const keys = K.activeRelease(r.createdAt, r.id);
    try {
      await t.doc.send(
        new UpdateCommand({
          TableName: t.table,
          Key: K.release(r.id),
          UpdateExpression: 'SET gsi2pk = :pk, gsi2sk = :sk',
          // The release must still exist and still be in the state read above: a release that became terminal
          // meanwhile must not re-enter the index it just left.
          ConditionExpression: 'attribute_exists(pk) AND #state = :state',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':pk': keys.gsi2pk, ':sk': keys.gsi2sk, ':state': r.state },
        }),
      );
      added.push(r.id);
    } catch (err) {
      // It moved meanwhile: a change to a terminal state keeps it out, any other change is looked at next time.
      if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    }
  }
  return added;
}
