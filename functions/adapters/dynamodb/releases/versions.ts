import { versionSortKey } from '#functions/coordinator/versions.js';
import { nowIso } from '#functions/shared/clock.js';
import { K, type LabelledItem, putNew } from '../common.js';
import { GetCommand, QueryCommand, UpdateCommand } from '../documents.js';
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

/** The guard item of a published version: which release holds it (one item per version, so one release). */
export function versionGuardItem(
  version: string,
  releaseId: string,
  createdAt: string,
): Record<string, unknown> {
  return {
    ...K.version(version),
    gsi1pk: 'VERSION',
    gsi1sk: versionSortKey(version),
    version,
    releaseId,
    createdAt,
  };
}

/** The pointer's update to `version`, only ever up (the first publish creates it). */
function highestUpdate(t: ReleaseTable, version: string, releaseId: string) {
  return {
    TableName: t.table,
    Key: K.highestVersion(),
    UpdateExpression: 'SET version = :v, sortKey = :sk, releaseId = :r',
    ConditionExpression: 'attribute_not_exists(sortKey) OR sortKey < :sk',
    ExpressionAttributeValues: { ':v': version, ':sk': versionSortKey(version), ':r': releaseId },
  };
}

/**
 * Raises the pointer to `version` unless it is there or higher already (an import's published releases: their
 * guards are written with them, the pointer once per batch).
 */
export async function raiseHighestVersion(
  t: ReleaseTable,
  version: string,
  releaseId: string,
): Promise<void> {
  try {
    await t.doc.send(new UpdateCommand(highestUpdate(t, version, releaseId)));
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
  }
}

/** A change's claim of `version` for `releaseId`: the guard item and the pointer's move, both labelled `version`. */
export function versionClaimItems(t: ReleaseTable, version: string, releaseId: string): LabelledItem[] {
  return [
    // putNew's condition (attribute_not_exists(pk)): a version another release already published is refused, so
    // published versions are unique even when two publishes race.
    putNew(t.table, 'version', version, versionGuardItem(version, releaseId, nowIso(t.clock))),
    // The pointer highestPublishedVersion reads; only ever moved up, in the same transaction as the claim.
    // The first publish creates the pointer; later ones only move it up. A publish that computed its version from a
    // highest that a concurrent publish has since passed fails here (as `version`) and plans again from the new
    // highest, so the pointer never goes back.
    { kind: 'version', id: version, item: { Update: highestUpdate(t, version, releaseId) } },
  ];
}
