import type { StackProps } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { WORKER_FUNCTIONS } from '#lib/orchestration-manifest.js';
import { TABLES, type TableDef, type TableKey } from '#lib/table-definitions.js';
import {
  actionsOf,
  collectImports,
  ENVS,
  logicalId,
  type Statement,
  type Synth,
  statementsOfRole,
  synth as synthApp,
  tableAttributeOfExport,
} from './app-fixture.js';

/**
 * CDK assertions on the whole app (lib/app.ts): every stack's env, the stateful stack (tables, the files bucket and
 * their removal policies), the schedules of the scheduled workers and the triggers of the stream workers. The other
 * concerns have files of their own beside this one (app.<aspect>.test.ts); app-fixture.ts says how they synthesize.
 *
 * @covers lib/app.ts
 */
let env: StackProps['env'];
let base: Synth;
/** The app in the env being run, with `context` on top of the defaults. */
const synth = (context: Record<string, unknown> = {}) => synthApp(env, context);

describe.each(ENVS)('the app, %s', (_, suiteEnv) => {
  // A whole-app synth with cdk-nag: seconds on a quiet machine, several times that on a busy one.
  beforeAll(() => {
    env = suiteEnv;
    base = synth();
  }, 120_000);

  it('deploys every stack to that env', () => {
    const expected = env ? `aws://${env.account}/${env.region}` : 'aws://unknown-account/unknown-region';
    const stacks = [base.built.stateful, base.built.auth, base.built.coordinator, base.built.files];
    for (const stack of [...stacks, base.built.dashboard, base.built.dashboardSite, base.built.observability])
      expect(stack?.environment).toBe(expected);
  });

  describe('stateful stack', () => {
    it('creates every declared table with its keys, GSIs, on-demand billing, PITR, KMS encryption and TTL', () => {
      for (const [key, def] of Object.entries(TABLES)) {
        const id = logicalId(base.built.stateful.tables[key as TableKey]);
        const table = base.stateful.toJSON().Resources[id];
        expect(table.Type).toBe('AWS::DynamoDB::Table');
        const p = table.Properties;
        expect(p.KeySchema).toEqual([
          { AttributeName: def.partitionKey.name, KeyType: 'HASH' },
          { AttributeName: def.sortKey.name, KeyType: 'RANGE' },
        ]);
        expect(p.BillingMode).toBe('PAY_PER_REQUEST');
        expect(p.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
        expect(p.SSESpecification).toEqual({ SSEEnabled: true });
        const indexes = (p.GlobalSecondaryIndexes ?? []).map((i: any) => ({
          name: i.IndexName,
          keys: i.KeySchema.map((k: any) => k.AttributeName),
          projection: i.Projection.ProjectionType,
        }));
        expect(indexes).toEqual(
          def.indexes.map((i) => ({
            name: i.indexName,
            keys: [i.partitionKey.name, i.sortKey?.name].filter(Boolean),
            projection: 'ALL',
          })),
        );
        const ttl = 'ttlAttribute' in def ? def.ttlAttribute : undefined;
        expect(p.TimeToLiveSpecification).toEqual(ttl ? { AttributeName: ttl, Enabled: true } : undefined);
      }
    });

    it('gives a table a stream of new and old images only where its definition asks for one (the coordinator table)', () => {
      const withStream: string[] = [];
      for (const [key, def] of Object.entries(TABLES) as [TableKey, TableDef][]) {
        const id = logicalId(base.built.stateful.tables[key]);
        const spec = base.stateful.toJSON().Resources[id].Properties.StreamSpecification;
        expect(spec, key).toEqual(def.stream ? { StreamViewType: def.stream } : undefined);
        if (spec) withStream.push(key);
      }
      expect(withStream).toEqual(['coordinator']);
    });

    it('retains the tables with deletion protection by default', () => {
      const tables = Object.values(base.stateful.findResources('AWS::DynamoDB::Table'));
      expect(tables).toHaveLength(Object.keys(TABLES).length);
      for (const t of tables) {
        expect(t.DeletionPolicy).toBe('Retain');
        expect(t.Properties.DeletionProtectionEnabled).toBe(true);
      }
    });

    it('keeps the files bucket private, SSE-encrypted, versioned and access-logged to its own bucket', () => {
      const bucketId = logicalId(base.built.stateful.filesBucket);
      const bucket = base.stateful.toJSON().Resources[bucketId].Properties;
      expect(bucket.PublicAccessBlockConfiguration).toEqual({
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      });
      expect(
        bucket.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault,
      ).toEqual({
        SSEAlgorithm: 'AES256',
      });
      expect(bucket.VersioningConfiguration).toEqual({ Status: 'Enabled' });
      expect(bucket.LoggingConfiguration.DestinationBucketName.Ref).toMatch(/AccessLogs/);
      expect(bucket.CorsConfiguration.CorsRules[0].AllowedMethods).toContain('GET');
      expect(base.stateful.toJSON().Resources[bucketId].DeletionPolicy).toBe('Retain');
    });

    it('bucket policy denies presigned requests older than 5 minutes (downloads: 12 hours) and any request without TLS', () => {
      const bucketId = logicalId(base.built.stateful.filesBucket);
      const policy = Object.values(base.stateful.findResources('AWS::S3::BucketPolicy')).find(
        (p) => p.Properties.Bucket.Ref === bucketId,
      );
      const statements = policy?.Properties.PolicyDocument.Statement as (Statement & {
        Principal: unknown;
      })[];
      expect(statements).toContainEqual(
        expect.objectContaining({
          Effect: 'Deny',
          NotAction: 's3:GetObject',
          Principal: { AWS: '*' },
          Condition: {
            StringEquals: { 's3:authType': 'REST-QUERY-STRING' },
            NumericGreaterThan: { 's3:signatureAge': 300000 },
          },
        }),
      );
      // A download URL lives as long as its object needs, at most 12 hours: older signatures are refused.
      expect(statements).toContainEqual(
        expect.objectContaining({
          Effect: 'Deny',
          Action: 's3:GetObject',
          Principal: { AWS: '*' },
          Condition: {
            StringEquals: { 's3:authType': 'REST-QUERY-STRING' },
            NumericGreaterThan: { 's3:signatureAge': 43_200_000 },
          },
        }),
      );
      expect(statements).toContainEqual(
        expect.objectContaining({
          Effect: 'Deny',
          Action: 's3:*',
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        }),
      );
    });

    it('removalPolicy destroy deletes tables and empties the bucket; snapshot keeps the bucket', () => {
      const destroyed = synth({ removalPolicy: 'destroy' });
      for (const t of Object.values(destroyed.stateful.findResources('AWS::DynamoDB::Table'))) {
        expect(t.DeletionPolicy).toBe('Delete');
        expect(t.Properties.DeletionProtectionEnabled).toBe(false);
      }
      destroyed.stateful.hasResource('Custom::S3AutoDeleteObjects', {});
      const snapshot = synth({ removalPolicy: 'snapshot' });
      const bucketId = logicalId(snapshot.built.stateful.filesBucket);
      expect(snapshot.stateful.toJSON().Resources[bucketId].DeletionPolicy).toBe('Retain');
      for (const t of Object.values(snapshot.stateful.findResources('AWS::DynamoDB::Table'))) {
        // Deleting a PITR table leaves a 35-day system backup; CloudFormation has no Snapshot policy for tables.
        expect(t.Properties.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled).toBe(true);
      }
    });
  });

  describe('schedules', () => {
    function rateOf(s: Synth, worker: string): string {
      const fnId = logicalId(s.built.coordinator.functions[worker].fn);
      const rules = Object.values(s.coordinator.findResources('AWS::Events::Rule')).filter((r) =>
        r.Properties.Targets.some((t: any) => t.Arn['Fn::GetAtt']?.[0] === fnId),
      );
      expect(rules, worker).toHaveLength(1);
      return rules[0].Properties.ScheduleExpression;
    }

    it('runs the health check and the reconciler every minute and the study sync hourly by default, and nothing else', () => {
      expect(rateOf(base, 'HealthCheck')).toBe('rate(1 minute)');
      expect(rateOf(base, 'Reconciler')).toBe('rate(1 minute)');
      expect(rateOf(base, 'StudySync')).toBe('rate(1 hour)');
      base.coordinator.resourceCountIs(
        'AWS::Events::Rule',
        WORKER_FUNCTIONS.filter((w) => w.schedule).length,
      );
    });

    it('retries an undelivered run within its interval, and keeps one that failed for good in a queue', () => {
      const queue = { 'Fn::GetAtt': [logicalId(base.built.coordinator.scheduleFailures.queue), 'Arn'] };
      const scheduled = WORKER_FUNCTIONS.filter((w) => w.schedule);
      const rules = Object.values(base.coordinator.findResources('AWS::Events::Rule'));
      for (const rule of rules) {
        const [target] = rule.Properties.Targets;
        expect(target.RetryPolicy.MaximumRetryAttempts).toBe(2);
        expect(target.DeadLetterConfig).toEqual({ Arn: queue });
      }
      const ages = rules
        .map((r) => r.Properties.Targets[0].RetryPolicy.MaximumEventAgeInSeconds)
        .sort((a, b) => a - b);
      expect(ages).toEqual([60, 60, 3600]);
      // Delivered runs are not repeated by Lambda; a run that throws goes to the same queue.
      for (const worker of scheduled) {
        base.coordinator.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
          FunctionName: { Ref: logicalId(base.built.coordinator.functions[worker.name].fn) },
          MaximumRetryAttempts: 0,
          DestinationConfig: { OnFailure: { Destination: queue } },
        });
      }
      base.coordinator.resourceCountIs('AWS::Lambda::EventInvokeConfig', scheduled.length);
      // EventBridge may put its undeliverable runs there: a queue policy for the rules.
      const policies = Object.values(base.coordinator.findResources('AWS::SQS::QueuePolicy'));
      expect(JSON.stringify(policies)).toContain('events.amazonaws.com');
    });

    it('takes every interval from context', () => {
      const s = synth({ healthIntervalMinutes: 5, studySyncMinutes: 30, reconcileMinutes: 2 });
      expect(rateOf(s, 'HealthCheck')).toBe('rate(5 minutes)');
      expect(rateOf(s, 'StudySync')).toBe('rate(30 minutes)');
      expect(rateOf(s, 'Reconciler')).toBe('rate(2 minutes)');
    });

    it('lets the reconciler start, describe and wake executions of the release machine, and use the coordinator table', () => {
      const fn = base.built.coordinator.functions.Reconciler;
      const actions = statementsOfRole(base.coordinator, logicalId(fn.role)).flatMap(actionsOf);
      expect(actions).toEqual(
        expect.arrayContaining([
          'states:StartExecution',
          'states:DescribeExecution',
          'states:SendTaskSuccess',
        ]),
      );
      expect(actions.some((a) => a.startsWith('dynamodb:'))).toBe(true);
    });
  });

  describe('table streams', () => {
    const streamed = WORKER_FUNCTIONS.filter((w) => w.stream);
    const mappings = () => Object.values(base.coordinator.findResources('AWS::Lambda::EventSourceMapping'));

    it('triggers each stream worker from its table’s stream, for its sort-key prefix’s inserts and modifications only', () => {
      expect(streamed.map((w) => w.name)).toEqual(['PhaseWatch']);
      expect(mappings()).toHaveLength(streamed.length);
      const exportOf = tableAttributeOfExport(base);
      for (const worker of streamed) {
        const fnId = logicalId(base.built.coordinator.functions[worker.name].fn);
        const found = mappings().filter((m) => m.Properties.FunctionName.Ref === fnId);
        expect(found, worker.name).toHaveLength(1);
        const p = found[0].Properties;
        // The stream of the table the manifest names, from the stateful stack (a cross-stack export).
        expect(collectImports(p.EventSourceArn).map(exportOf)).toEqual([[worker.stream!.table, 'StreamArn']]);
        // Lambda drops every other record before invoking: deletions, and writes of any other item.
        expect(p.FilterCriteria.Filters.map((f: { Pattern: string }) => JSON.parse(f.Pattern))).toEqual([
          {
            eventName: ['INSERT', 'MODIFY'],
            dynamodb: { Keys: { sk: { S: [{ prefix: worker.stream!.skPrefix }] } } },
          },
        ]);
        expect(p).toMatchObject({
          StartingPosition: 'LATEST',
          BatchSize: 100,
          BisectBatchOnFunctionError: true,
          // Releases (partition keys) side by side, each one's records in order.
          ParallelizationFactor: 10,
        });
        // No batching window: a record invokes at the next poll of its shard, within a second.
        expect(p.MaximumBatchingWindowInSeconds).toBeUndefined();
        // Bounded retries, then the batch's shard positions go to the queue and the shard moves on.
        expect(p.MaximumRetryAttempts).toBe(3);
        expect(p.DestinationConfig).toEqual({
          OnFailure: {
            Destination: { 'Fn::GetAtt': [logicalId(base.built.coordinator.streamFailures.queue), 'Arn'] },
          },
        });
      }
      expect(WORKER_FUNCTIONS.find((w) => w.name === 'PhaseWatch')?.stream?.skPrefix).toBe('RE#V#');
    });

    it('lets a stream worker read its stream alone, send its failed batches to the queue and wake the release machine', () => {
      const exportOf = tableAttributeOfExport(base);
      const queue = { 'Fn::GetAtt': [logicalId(base.built.coordinator.streamFailures.queue), 'Arn'] };
      const streamActions = [
        'dynamodb:DescribeStream',
        'dynamodb:GetRecords',
        'dynamodb:GetShardIterator',
        'dynamodb:ListStreams',
      ];
      for (const [name, fn] of Object.entries(base.built.coordinator.functions)) {
        const statements = statementsOfRole(base.coordinator, logicalId(fn.role));
        const reads = statements.filter((st) => actionsOf(st).some((a) => streamActions.includes(a)));
        const sends = statements.filter((st) => actionsOf(st).includes('sqs:SendMessage'));
        const worker = streamed.find((w) => w.name === name);
        if (!worker) {
          expect(reads, name).toEqual([]);
          continue;
        }
        expect(reads, name).toHaveLength(1);
        expect(actionsOf(reads[0]).sort()).toEqual(streamActions);
        // The stream's own ARN: no `*` (CDK's grantStreamRead would add ListStreams on `*`).
        expect(collectImports(reads[0].Resource).map(exportOf)).toEqual([
          [worker.stream!.table, 'StreamArn'],
        ]);
        expect(sends.map((st) => st.Resource)).toEqual([queue]);
        expect(statements.flatMap(actionsOf)).toContain('states:SendTaskSuccess');
      }
      base.coordinator.hasResourceProperties('AWS::SQS::Queue', {
        SqsManagedSseEnabled: true,
        MessageRetentionPeriod: 14 * 24 * 3600,
      });
    });
  });
});
