import { type RemovalPolicy, RemovalPolicy as RP } from 'aws-cdk-lib';
import {
  AttributeType,
  BillingMode,
  type ITable,
  ProjectionType,
  StreamViewType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { indexStep, type KeyDef, TABLES, type TableDef, type TableKey } from './table-definitions.js';

const attr = (k: KeyDef) => ({
  name: k.name,
  type: k.type === 'N' ? AttributeType.NUMBER : AttributeType.STRING,
});

export interface TablesProps {
  removalPolicy: RemovalPolicy;
  /** The indexes each table has now (the `deployedIndexes` setting): one more is added per deploy. */
  deployedIndexes?: Partial<Record<TableKey, string[]>>;
}

/**
 * The tables of lib/table-definitions.ts, the same definitions DynamoDB Local is built from. On-demand capacity,
 * point-in-time recovery, KMS encryption at rest (AWS-managed key, so cross-stack grants need no key policy) and
 * deletion protection whenever the data is meant to be retained. A table whose definition declares a `stream` gets
 * one (new and old images), read by the function the manifest triggers from it (lib/coordinator-stack.ts).
 */
export class Tables extends Construct {
  readonly byKey: Record<TableKey, ITable>;

  constructor(scope: Construct, id: string, props: TablesProps) {
    super(scope, id);
    const byKey = {} as Record<TableKey, ITable>;
    for (const [key, def] of Object.entries(TABLES) as [TableKey, TableDef][]) {
      const table = new Table(this, def.id, {
        partitionKey: attr(def.partitionKey),
        sortKey: def.sortKey && attr(def.sortKey),
        billingMode: BillingMode.PAY_PER_REQUEST,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        encryption: TableEncryption.AWS_MANAGED,
        timeToLiveAttribute: def.ttlAttribute,
        removalPolicy: props.removalPolicy,
        deletionProtection: props.removalPolicy === RP.RETAIN,
        // Only where a function is triggered by the table's changes (lib/orchestration-manifest.ts `stream`).
        stream: def.stream === 'NEW_AND_OLD_IMAGES' ? StreamViewType.NEW_AND_OLD_IMAGES : undefined,
      });
      for (const index of indexStep(def.indexes, props.deployedIndexes?.[key])) {
        table.addGlobalSecondaryIndex({
          indexName: index.indexName,
          partitionKey: attr(index.partitionKey),
          sortKey: index.sortKey && attr(index.sortKey),
          projectionType: ProjectionType.ALL,
        });
      }
      byKey[key] = table;
    }
    this.byKey = byKey;
  }
}

/**
 * The data-plane actions of CDK's grantReadData / grantReadWriteData, without the stream actions: a table's stream is
 * read by the Lambda event source mapping of the one function it triggers, granted on that stream alone
 * (`grantStreamRead` below), never through the table access of the manifests.
 */
export const TABLE_READ_ACTIONS = [
  'dynamodb:BatchGetItem',
  'dynamodb:Query',
  'dynamodb:GetItem',
  'dynamodb:Scan',
  'dynamodb:ConditionCheckItem',
  'dynamodb:DescribeTable',
];
/**
 * What a Lambda event source mapping needs to read a table's stream (the function's role is what Lambda polls with).
 * CDK's own grantStreamRead adds `dynamodb:ListStreams` on `*`; ListStreams is authorized on the stream ARN too, so
 * this grants all four on the stream alone and no policy carries a wildcard resource.
 */
export const STREAM_READ_ACTIONS = [
  'dynamodb:DescribeStream',
  'dynamodb:GetRecords',
  'dynamodb:GetShardIterator',
  'dynamodb:ListStreams',
];

export const TABLE_WRITE_ACTIONS = [
  'dynamodb:BatchWriteItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
];

/**
 * Read (r) or read/write (rw) access to one table and its declared indexes, by name. Same actions as CDK's
 * grantReadData / grantReadWriteData (TransactWriteItems and TransactGetItems are authorized per item action), but
 * the index ARNs are spelled out instead of `<table>/index/*`, so no policy carries a wildcard resource.
 */
export function grantTableAccess(
  table: ITable,
  key: TableKey,
  access: 'r' | 'rw',
  grantee: IGrantable,
): void {
  const def: TableDef = TABLES[key];
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: access === 'rw' ? [...TABLE_READ_ACTIONS, ...TABLE_WRITE_ACTIONS] : TABLE_READ_ACTIONS,
      resources: [table.tableArn, ...def.indexes.map((i) => `${table.tableArn}/index/${i.indexName}`)],
    }),
  );
}

/** Read access to a table's stream, for the function an event source mapping on it invokes (STREAM_READ_ACTIONS). */
export function grantStreamRead(table: ITable, grantee: IGrantable): void {
  if (!table.tableStreamArn) throw new Error(`${table.node.path}: the table has no stream to read`);
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({ actions: STREAM_READ_ACTIONS, resources: [table.tableStreamArn] }),
  );
}
