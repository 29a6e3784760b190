import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import { BackupPlan, BackupPlanRule, BackupResource, BackupVault } from 'aws-cdk-lib/aws-backup';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Schedule } from 'aws-cdk-lib/aws-events';
import { ManagedPolicy, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { acknowledge } from './nag.js';

export interface BackupsProps {
  /** Prefix of the vault's and the plan's names. */
  prefix: string;
  tables: ITable[];
  /** The study files bucket (versioned: AWS Backup backs up S3 only with versioning on). */
  bucket: IBucket;
  retentionDays: number;
  /** The vault's, like the logs': kept when the stack is deleted unless everything is to go. */
  removalPolicy: RemovalPolicy;
}

/**
 * An AWS Backup plan for the data (the `backups` setting, on by default; docs/operations.md, Backups and restores):
 * a daily backup of every table and of the files bucket at 03:00 UTC, kept `backupRetentionDays` in a vault of its
 * own. It is beside, not instead of, the tables' point-in-time recovery (35 days, to the second) and the bucket's
 * noncurrent versions (a deleted file's bytes, `noncurrentVersionDays`): it is the copy that survives a deleted
 * table or bucket, and the one an account-wide backup policy or a copy to another account would start from.
 */
export class Backups extends Construct {
  readonly vault: BackupVault;
  readonly plan: BackupPlan;

  constructor(scope: Construct, id: string, props: BackupsProps) {
    super(scope, id);
    this.vault = new BackupVault(this, 'Vault', {
      backupVaultName: `${props.prefix}-backups`,
      removalPolicy: props.removalPolicy,
    });
    this.plan = new BackupPlan(this, 'Plan', {
      backupPlanName: `${props.prefix}-daily`,
      backupVault: this.vault,
      backupPlanRules: [
        new BackupPlanRule({
          ruleName: 'Daily',
          scheduleExpression: Schedule.cron({ hour: '3', minute: '0' }),
          deleteAfter: Duration.days(props.retentionDays),
        }),
      ],
    });
    // AWS Backup's own service role policies: DynamoDB and the rest through the default backup and restore
    // policies, S3 through its dedicated pair (the default ones do not cover S3).
    const role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('backup.amazonaws.com'),
      description: 'AWS Backup: backs up and restores the tables and the study files bucket',
      managedPolicies: [
        'AWSBackupServiceRolePolicyForBackup',
        'AWSBackupServiceRolePolicyForRestores',
        'AWSBackupServiceRolePolicyForS3Backup',
        'AWSBackupServiceRolePolicyForS3Restore',
      ].map((name) => ManagedPolicy.fromAwsManagedPolicyName(`service-role/${name}`)),
    });
    this.plan.addSelection('Data', {
      resources: [
        ...props.tables.map((t) => BackupResource.fromDynamoDbTable(t)),
        BackupResource.fromArn(props.bucket.bucketArn),
      ],
      role,
      // The role above carries the backup and restore policies already.
      disableDefaultBackupPolicy: true,
    });
    for (const name of [
      'AWSBackupServiceRolePolicyForBackup',
      'AWSBackupServiceRolePolicyForRestores',
      'AWSBackupServiceRolePolicyForS3Backup',
      'AWSBackupServiceRolePolicyForS3Restore',
    ])
      acknowledge(
        role,
        `AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/${name}]`,
        "AWS Backup's own service role policy, which AWS keeps in step with what the service needs to back up " +
          'and restore DynamoDB tables and S3 buckets; the role is assumable by AWS Backup alone.',
      );
  }
}
