import { versionSortKey } from '#functions/coordinator/versions.js';
import { nowIso } from '#functions/shared/clock.js';
import { K, type LabelledItem, putNew } from '../common.js';
import { GetCommand, QueryCommand } from '../documents.js';
import type { ReleaseTable } from './table.js';

/**
 * Published versions: a guard item per version (VERSION#<v>, so no two releases publish the same version) and the
 * pointer to the highest one (VERSION / HIGHEST), both written by the publishing change (changes.ts).
 */

/**
 * One strongly consistent read of the pointer item that every publish moves in its own transaction, so a release
 * created right after a publish never misses it (the version index would be eventually consistent). Tables from
 * before the pointer existed have none until their next publish: then the version index is read once.
 */
export async function highestPublishedVersion(t: ReleaseTable): Promise<string | null> {
  const got = await t.doc.send(
    new GetCommand({ TableName: t.table, Key: K.highestVersion(), ConsistentRead: true }),
  );
  if (typeof got.Item?.version === 'string') return got.Item.version;
  const out = await t.doc.send(
    new QueryCommand({
      TableName: t.table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': 'VERSION' },
      ScanIndexForward: false,
      Limit: 1,
    }),
  );
  const v = out.Items?.[0]?.version;
  return typeof v === 'string' ? v : null;
}

/** A change's claim of `version` for `releaseId`: the guard item and the pointer's move, both labelled `version`. */
export function versionClaimItems(t: ReleaseTable, version: string, releaseId: string): LabelledItem[] {
  const sortKey = versionSortKey(version);
  return [
    // putNew's condition (attribute_not_exists(pk)): a version another release already published is refused, so
    // published versions are unique even when two publishes race.
    putNew(t.table, 'version', version, {
      ...K.version(version),
      gsi1pk: 'VERSION',
      gsi1sk: sortKey,
      version,
      releaseId,
      createdAt: nowIso(t.clock),
    }),
    // The pointer highestPublishedVersion reads; only ever moved up, in the same transaction as the claim.
    {
      kind: 'version',
      id: version,
      item: {
        Update: {
          TableName: t.table,
          Key: K.highestVersion(),
          UpdateExpression: 'SET version = :v, sortKey = :sk, releaseId = :r',
          // The first publish creates the pointer; later ones only move it up. A publish that computed its version
          // from a highest that a concurrent publish has since passed fails here (as `version`) and plans again
          // from the new highest, so the pointer never goes back.
          ConditionExpression: 'attribute_not_exists(sortKey) OR sortKey < :sk',
          ExpressionAttributeValues: { ':v': version, ':sk': sortKey, ':r': releaseId },
        },
      },
    },
  ];
}
