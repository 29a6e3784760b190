import {
  DescribeContinuousBackupsCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  RestoreTableToPointInTimeCommand,
  UpdateContinuousBackupsCommand,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { TABLES, type TableKey } from '#lib/table-definitions.js';

/**
 * `npm run restore -- --table <name> --to <time>`: DynamoDB's point-in-time recovery into a new table, made ready to
 * replace the one the stack uses (docs/operations.md, Restore a table). A restore creates a table under a new name
 * with the data and the indexes of that moment; what DynamoDB does not carry over is set again here, as the stack
 * sets it on its own tables: point-in-time recovery, TTL, the stream, deletion protection (on-demand billing and the
 * AWS-managed KMS key are asked for in the restore). The answer names the `restoredTables` setting that switches the
 * stack to it; nothing else is changed, and the table it came from stays as it is.
 */
export interface RestoreRequest {
  /** The table to restore from (its physical name, as the Stateful stack's outputs print it). */
  table: string;
  /** The moment to restore to; `latest` for the latest restorable time. */
  to: Date | 'latest';
  /** The new table's name; default `<table>-restored-<yyyymmddhhmm of --to>`. */
  target?: string;
  /** Which of the app's tables it is; default: read from the name (the stack names them after it). */
  key?: TableKey;
}

export interface Restored {
  key: TableKey;
  source: string;
  tableName: string;
  restoredTo: string;
  streamArn?: string;
  /** The setting to deploy with: `-c restoredTables='<this>'`, merged with any other restored table's. */
  setting: Record<string, { tableName: string; streamArn?: string }>;
}

/** Which of TABLES a physical name belongs to: CloudFormation names them `<stack>-Tables<Id><hash>-<suffix>`. */
export function tableKeyOf(name: string): TableKey | undefined {
  const found = (Object.entries(TABLES) as [TableKey, { id: string }][]).filter(([, def]) =>
    new RegExp(`(^|[^A-Za-z])(Tables)?${def.id}([^a-z]|$)`).test(name),
  );
  return found.length === 1 ? found[0][0] : undefined;
}

const stamp = (d: Date) => d.toISOString().slice(0, 16).replace(/[-:T]/g, '');

export async function restoreTable(
  ddb: DynamoDBClient,
  req: RestoreRequest,
  progress: (line: string) => void = () => {},
): Promise<Restored> {
  const key = req.key ?? tableKeyOf(req.table);
  if (!key)
    throw new Error(`Cannot tell which table ${req.table} is: give --key coordinator, studies or files`);
  const def = TABLES[key] as (typeof TABLES)[TableKey] & { stream?: string; ttlAttribute?: string };
  const backups = await ddb.send(new DescribeContinuousBackupsCommand({ TableName: req.table }));
  const pitr = backups.ContinuousBackupsDescription?.PointInTimeRecoveryDescription;
  if (pitr?.PointInTimeRecoveryStatus !== 'ENABLED')
    throw new Error(`${req.table} has no point-in-time recovery to restore from`);
  const earliest = pitr.EarliestRestorableDateTime;
  const latest = pitr.LatestRestorableDateTime;
  if (req.to !== 'latest' && ((earliest && req.to < earliest) || (latest && req.to > latest)))
    throw new Error(
      `${req.table} can be restored to a time from ${earliest?.toISOString()} to ${latest?.toISOString()}, ` +
        `not ${req.to.toISOString()}`,
    );
  const at = req.to === 'latest' ? (latest ?? new Date()) : req.to;
  const target = req.target ?? `${req.table}-restored-${stamp(at)}`.slice(0, 255);
  progress(`restoring ${req.table} as it was at ${at.toISOString()} into ${target}`);
  await ddb.send(
    new RestoreTableToPointInTimeCommand({
      SourceTableName: req.table,
      TargetTableName: target,
      ...(req.to === 'latest' ? { UseLatestRestorableTime: true } : { RestoreDateTime: req.to }),
      BillingModeOverride: 'PAY_PER_REQUEST',
      SSESpecificationOverride: { Enabled: true, SSEType: 'KMS' },
    }),
  );
  // A large table takes a while: DynamoDB copies it in the background. Poll up to a day.
  await waitUntilTableExists(
    { client: ddb, maxWaitTime: 86_400, minDelay: 20, maxDelay: 120 },
    { TableName: target },
  );
  progress(`${target} is active; setting what a restore does not carry over`);
  await ddb.send(
    new UpdateContinuousBackupsCommand({
      TableName: target,
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    }),
  );
  const ttl = await ddb.send(new DescribeTimeToLiveCommand({ TableName: req.table }));
  const ttlAttribute = ttl.TimeToLiveDescription?.AttributeName ?? def.ttlAttribute;
  if (ttlAttribute)
    await ddb.send(
      new UpdateTimeToLiveCommand({
        TableName: target,
        TimeToLiveSpecification: { AttributeName: ttlAttribute, Enabled: true },
      }),
    );
  await ddb.send(new UpdateTableCommand({ TableName: target, DeletionProtectionEnabled: true }));
  let streamArn: string | undefined;
  if (def.stream) {
    await waitUntilTableExists(
      { client: ddb, maxWaitTime: 600, minDelay: 5, maxDelay: 20 },
      { TableName: target },
    );
    const updated = await ddb.send(
      new UpdateTableCommand({
        TableName: target,
        StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
      }),
    );
    streamArn =
      updated.TableDescription?.LatestStreamArn ??
      (await ddb.send(new DescribeTableCommand({ TableName: target }))).Table?.LatestStreamArn;
    if (!streamArn) throw new Error(`${target} has no stream after enabling one`);
  }
  return {
    key,
    source: req.table,
    tableName: target,
    restoredTo: at.toISOString(),
    ...(streamArn ? { streamArn } : {}),
    setting: { [key]: { tableName: target, ...(streamArn ? { streamArn } : {}) } },
  };
}
