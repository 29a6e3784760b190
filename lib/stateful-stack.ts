import { Annotations, CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { FilesBucket } from './files-bucket.js';
import { removalPolicies, type Settings } from './settings.js';
import type { TableKey } from './table-definitions.js';
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
  readonly tables: Record<TableKey, ITable>;
  readonly filesBucket: IBucket;
  /**
   * Export that carries the bucket name to the stateless stacks. Named explicitly (not CDK's generated
   * cross-stack reference) so the bucket ARN they build from it is predictable, e.g. for cdk-nag acknowledgements.
   */
  readonly filesBucketExportName: string;

  constructor(scope: Construct, id: string, props: StatefulStackProps) {
    super(scope, id, props);
    const policies = removalPolicies(props.settings);
    this.tables = new Tables(this, 'Tables', { removalPolicy: policies.tables }).byKey;
    const corsOrigins = filesCorsOrigins(props.settings.filesCorsOrigins, props.dashboardOrigin);
    if (corsOrigins.includes('*'))
      Annotations.of(this).addWarningV2(
        'release-coordinator:filesCorsAnyOrigin',
        'filesCorsOrigins is `*`: a script on any web site may GET and PUT study files through a presigned URL it ' +
          'holds. List the origins that need it instead (docs/deploy.md).',
      );
    this.filesBucket = new FilesBucket(this, 'Files', { removalPolicy: policies.bucket, corsOrigins }).bucket;

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
