import type { VersionRecord } from '#functions/files/model.js';
import { counterKey, type LabelledItem } from './common.js';
import { FC, FK, TOTALS_SHARDS } from './files-table.js';

/**
 * The transaction items the file repository (files-repository.ts) composes its writes from: each says what it moves
 * and under which condition. Only that repository uses them.
 */

/** What a confirmation reads of a file first: its study, and whether none of its versions was confirmed yet. */
export interface FileFlags {
  study_id: string;
  unconfirmed?: boolean;
  deleting?: boolean;
  pendingVersions?: number;
}

/** An available version's key item goes with it. */
export function availableDeletes(table: string, versions: VersionRecord[]): LabelledItem[] {
  return versions
    .filter((v) => v.state === 'available')
    .map((v) => ({
      kind: 'available',
      id: v.id,
      item: { Delete: { TableName: table, Key: FK.available(v.file_id, v.created_at, v.id) } },
    }));
}

/** Deletes a version only if it is still in the state it was read in, so the totals move with what is deleted. */
export function versionDelete(table: string, version: VersionRecord): LabelledItem {
  return {
    kind: 'version',
    id: version.id,
    item: {
      Delete: {
        TableName: table,
        Key: FK.version(version.file_id, version.id),
        ConditionExpression: '#state = :state',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':state': version.state },
      },
    },
  };
}

/** Adds to (or, with sign -1, takes off) the totals the available ones among `versions`; nothing if none is. */
export function totalsChange(table: string, versions: VersionRecord[], sign: 1 | -1): LabelledItem[] {
  const available = versions.filter((v) => v.state === 'available');
  if (available.length === 0) return [];
  const bytes = available.reduce((sum, v) => sum + v.size, 0);
  return [
    {
      kind: 'totals',
      id: 'available',
      item: {
        Update: {
          TableName: table,
          Key: FK.totalsShard(Math.floor(Math.random() * TOTALS_SHARDS)),
          UpdateExpression: 'ADD versions :n, #bytes :b',
          ExpressionAttributeNames: { '#bytes': 'bytes' },
          ExpressionAttributeValues: { ':n': sign * available.length, ':b': sign * bytes },
        },
      },
    },
  ];
}

/** A file's versions move its counts: one Update of the file item in the same transaction. */
export function versionCountChange(table: string, fileId: string, removed: VersionRecord[]): LabelledItem {
  const pending = removed.filter((v) => v.state === 'pending').length;
  return {
    kind: 'file_count',
    id: fileId,
    item: {
      Update: {
        TableName: table,
        Key: FK.file(fileId),
        UpdateExpression: 'ADD versionCount :d, pendingVersions :p',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':d': -removed.length, ':p': -pending },
      },
    },
  };
}

/**
 * The study's count of files with nothing confirmed yet; going up, it is the per-study cap (a condition on the
 * counter's one shard, so concurrent creations cannot both pass it).
 */
export function pendingFilesChange(
  table: string,
  studyId: string,
  delta: 1 | -1,
  cap?: number,
): LabelledItem {
  const counter = FC.pendingFilesOfStudy(studyId);
  return {
    kind: 'pending_files',
    id: studyId,
    item: {
      Update: {
        TableName: table,
        Key: counterKey(counter.name, 0),
        UpdateExpression: 'ADD n :d',
        ...(cap === undefined
          ? { ExpressionAttributeValues: { ':d': delta } }
          : {
              ConditionExpression: 'attribute_not_exists(n) OR n < :cap',
              ExpressionAttributeValues: { ':d': delta, ':cap': cap },
            }),
      },
    },
  };
}

/** A version leaves `pending`: the file's count, and the file's first confirmation takes it off the study's. */
export function leavesPending(table: string, fileId: string, flags: FileFlags): LabelledItem[] {
  const first = flags.unconfirmed === true;
  return [
    {
      kind: 'file_pending',
      id: fileId,
      item: {
        Update: {
          TableName: table,
          Key: FK.file(fileId),
          UpdateExpression: first ? 'ADD pendingVersions :m REMOVE unconfirmed' : 'ADD pendingVersions :m',
          ConditionExpression: first
            ? 'attribute_exists(pk) AND attribute_exists(unconfirmed)'
            : 'attribute_exists(pk) AND attribute_not_exists(unconfirmed)',
          ExpressionAttributeValues: { ':m': -1 },
        },
      },
    },
    ...(first ? [pendingFilesChange(table, flags.study_id, -1)] : []),
  ];
}
