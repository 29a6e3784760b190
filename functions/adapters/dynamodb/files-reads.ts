import { type FileSummary, type VersionRecord, versionRecord } from '#functions/files/model.js';
import { mapLimit } from '#functions/shared/concurrency.js';
import { decode } from './common.js';
import { type Documents, QueryCommand } from './documents.js';
import { FK } from './files-table.js';

/**
 * Reads of the file repository that listings and uploads add to its own (files-repository.ts delegates to them): a
 * file's state with its newest available version, and whether a study has a file of a given name. Key layout:
 * files-table.ts.
 */

/** Files summarized at once: each costs one or two Queries, all of one partition. */
const SUMMARY_CONCURRENCY = 16;

/** The newest `AVAIL#` key item of a file: its newest available version, by key and strongly consistent. */
async function latestAvailable(doc: Documents, table: string, fileId: string): Promise<VersionRecord | null> {
  const out = await doc.send(
    new QueryCommand({
      TableName: table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :avail)',
      ExpressionAttributeValues: { ':pk': FK.filePk(fileId), ':avail': 'AVAIL#' },
      ScanIndexForward: false,
      Limit: 1,
      ConsistentRead: true,
    }),
  );
  const item = out.Items?.[0];
  return item ? decode(versionRecord, item) : null;
}

/** The state of a file's newest version of all (gsi1 lists a file's versions newest first). */
async function newestState(doc: Documents, table: string, fileId: string) {
  const out = await doc.send(
    new QueryCommand({
      TableName: table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :pk',
      ExpressionAttributeValues: { ':pk': FK.versionsOfFile(fileId) },
      ScanIndexForward: false,
      Limit: 1,
    }),
  );
  const item = out.Items?.[0];
  return item ? decode(versionRecord, item).state : null;
}

export async function fileSummaries(
  doc: Documents,
  table: string,
  fileIds: readonly string[],
): Promise<FileSummary[]> {
  return mapLimit(fileIds, SUMMARY_CONCURRENCY, async (fileId): Promise<FileSummary> => {
    const latest = await latestAvailable(doc, table, fileId);
    if (latest) return { state: 'available', latest };
    const state = await newestState(doc, table, fileId);
    // The index lags the table: a version it still shows as available was deleted meanwhile (no key item).
    return { state: state && state !== 'available' ? state : 'no_versions', latest: null };
  });
}

/**
 * Whether any file of the study (but `exceptFileId`) is named `name`: the study's list of files (gsi1) read with a filter, page after
 * page until one matches. It reads every file of the study in the worst case, and it reads an index, so a file
 * created a moment before may not be seen yet.
 */
export async function hasFileNamed(
  doc: Documents,
  table: string,
  studyId: string,
  name: string,
  exceptFileId?: string,
): Promise<boolean> {
  let start: Record<string, unknown> | undefined;
  do {
    const out = await doc.send(
      new QueryCommand({
        TableName: table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk',
        FilterExpression: exceptFileId ? '#name = :name AND pk <> :except' : '#name = :name',
        ExpressionAttributeNames: { '#name': 'name' },
        ExpressionAttributeValues: {
          ':pk': FK.filesOfStudy(studyId),
          ':name': name,
          ...(exceptFileId ? { ':except': FK.filePk(exceptFileId) } : {}),
        },
        ProjectionExpression: 'pk',
        ExclusiveStartKey: start,
      }),
    );
    if (out.Items?.length) return true;
    start = out.LastEvaluatedKey;
  } while (start);
  return false;
}
