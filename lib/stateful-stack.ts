import { Annotations, CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import { type ITable, Table } from 'aws-cdk-lib/aws-dynamodb';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { Backups } from './backups.js';
import { FilesBucket } from './files-bucket.js';
import { removalPolicies, type Settings } from './settings.js';
import { TABLES, type TableKey } from './table-definitions.js';
import { Tables } from './tables.js';

export interface StatefulStackProps extends StackProps {
  settings: Settings;
  /** The dashboard's URL: browsers on it PUT and GET study files with presigned URLs (bucket CORS). */
  dashboardOrigin?: string;
}

/**
 * Everything that holds data and must outlive deploys of the code: the tables and the study files bucket (with its
 * access-log bucket). Removal policy from context `removalPolicy`.
 */
export class StatefulStack extends Stack {
  /** The tables the functions use: the stack's own, or the restored ones the `restoredTables` setting names. */
  readonly tables: Record<TableKey, ITable>;
  /** The tables this stack creates (kept when a restored table replaces one of them). */
  readonly ownTables: Record<TableKey, ITable>;
  readonly backups?: Backups;
  readonly filesBucket: IBucket;
  /**
   * Export that carries the bucket name to the stateless stacks. Named explicitly (not CDK's generated
   * cross-stack reference) so the bucket ARN they build from it is predictable, e.g. for cdk-nag acknowledgements.
   */
  readonly filesBucketExportName: string;

  constructor(scope: Construct, id: string, props: StatefulStackProps) {
    super(scope, id, props);
    const { settings } = props;
    const policies = removalPolicies(settings);
    this.ownTables = new Tables(this, 'Tables', {
      removalPolicy: policies.tables,
      deployedIndexes: settings.deployedIndexes,
    }).byKey;
    this.tables = { ...this.ownTables, ...restoredTables(this, settings) };
    const corsOrigins = filesCorsOrigins(settings.filesCorsOrigins, props.dashboardOrigin);
    if (corsOrigins.includes('*'))
      Annotations.of(this).addWarningV2(
        'release-coordinator:filesCorsAnyOrigin',
        'filesCorsOrigins is `*`: a script on any web site may GET and PUT study files through a presigned URL it ' +
          'holds. List the origins that need it instead (docs/deploy.md).',
      );
    this.filesBucket = new FilesBucket(this, 'Files', {
      removalPolicy: policies.bucket,
      corsOrigins,
      noncurrentVersionDays: settings.noncurrentVersionDays,
    }).bucket;
    if (settings.backups)
      this.backups = new Backups(this, 'Backups', {
        prefix: settings.prefix,
        tables: Object.values(this.tables),
        bucket: this.filesBucket,
        retentionDays: settings.backupRetentionDays,
        removalPolicy: policies.logs,
      });

    for (const [key, table] of Object.entries(this.tables)) {
      new CfnOutput(this, `${key}TableName`, { value: table.tableName });
    }
    this.filesBucketExportName = `${props.settings.prefix}-FilesBucketName`;
    new CfnOutput(this, 'FilesBucketName', {
      value: this.filesBucket.bucketName,
      exportName: this.filesBucketExportName,
    });
  }
}

/**
 * The bucket's CORS origins: the dashboard's own and the configured ones; `*` alone when it is configured (it covers
 * every other). None (no dashboard, nothing configured): the bucket answers no browser.
 */
export function filesCorsOrigins(configured: string[], dashboard?: string): string[] {
  if (configured.includes('*')) return ['*'];
  return [...new Set([...configured, ...(dashboard ? [dashboard] : [])])];
}

/**
 * The tables `restoredTables` names (restored to a point in time by `npm run restore`), imported by name with their
 * indexes and stream, in place of the stack's own.
 */
function restoredTables(scope: Construct, settings: Settings): Partial<Record<TableKey, ITable>> {
  const out: Partial<Record<TableKey, ITable>> = {};
  for (const [key, restored] of Object.entries(settings.restoredTables) as [
    TableKey,
    { tableName: string; streamArn?: string } | undefined,
  ][]) {
    if (!restored) continue;
    out[key] = Table.fromTableAttributes(scope, `Restored${TABLES[key].id}`, {
      tableName: restored.tableName,
      tableStreamArn: restored.streamArn,
      globalIndexes: TABLES[key].indexes.map((i) => i.indexName),
    });
  }
  return out;
}
