import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { readSettings } from '#lib/settings.js';
import { TABLES, type TableKey } from '#lib/table-definitions.js';
import { actionsOf, logicalId, type Synth, statementsOfRole, synth } from './app-fixture.js';

/**
 * CDK assertions on what day two needs of the app: the migration step between the tables and the functions, the
 * backup plan and the versioned files bucket, log groups kept a year and retained, the events' retention, a switch to
 * restored tables and new indexes one per deploy. One concrete env (the CLI's): these do not depend on it, and each
 * whole-app synth costs seconds.
 *
 * @covers lib/app.ts
 * @covers lib/migrations-stack.ts
 * @covers lib/backups.ts
 */
const ENV = { account: '123456789012', region: 'eu-west-1' };
const RESTORED = {
  coordinator: {
    tableName: 'ReleaseCoordinator-Coordinator-restored-20261130',
    streamArn:
      'arn:aws:dynamodb:eu-west-1:123456789012:table/ReleaseCoordinator-Coordinator-restored-20261130/stream/2026-11-30T10:00:00.000',
  },
};
const VARIANT = {
  backups: 'false',
  noncurrentVersionDays: '7',
  logRetentionDays: '90',
  eventRetentionDays: '400',
  removalPolicy: 'destroy',
  restoredTables: JSON.stringify(RESTORED),
  deployedIndexes: JSON.stringify({ coordinator: ['gsi1', 'gsi2'], studies: [] }),
  coordinatorClients: 'b,a',
};

let base: Synth;
let variant: Synth;
const templateOf = (stack: Stack) => Template.fromStack(stack);

beforeAll(() => {
  base = synth(ENV);
  variant = synth(ENV, VARIANT);
}, 240_000);

describe('the migration step of a deploy', () => {
  it('is a trigger in a stack between the tables and the functions, run on every change of its function', () => {
    const migrations = templateOf(base.built.migrations);
    const triggers = Object.values(migrations.findResources('Custom::Trigger'));
    expect(triggers).toHaveLength(1);
    const fn = logicalId(base.built.migrations.migrate.fn);
    const handlerArn = JSON.stringify(triggers[0].Properties.HandlerArn);
    // The function's current version: a new bundle or new settings make a new version, and the trigger runs again.
    const versions = Object.entries(migrations.findResources('AWS::Lambda::Version'));
    expect(versions.some(([id, v]) => handlerArn.includes(id) && JSON.stringify(v).includes(fn))).toBe(true);
    expect(triggers[0].Properties.ExecuteOnHandlerChange).toBe(true);
    expect(base.built.migrations.dependencies).toContain(base.built.stateful);
    expect(base.built.coordinator.dependencies).toContain(base.built.migrations);
    expect(base.built.files.dependencies).toContain(base.built.migrations);
  });

  it('may read and write the three tables, and nothing else of the data', () => {
    const role = logicalId(base.built.migrations.migrate.role);
    const actions = statementsOfRole(templateOf(base.built.migrations), role).flatMap(actionsOf);
    expect(actions).toEqual(expect.arrayContaining(['dynamodb:Scan', 'dynamodb:BatchWriteItem']));
    expect(actions.filter((a) => a.startsWith('s3:') || a.startsWith('states:'))).toEqual([]);
    const env = templateOf(base.built.migrations).findResources('AWS::Lambda::Function');
    const vars = Object.values(env).find((f) => f.Properties.Environment)?.Properties.Environment.Variables;
    expect(Object.keys(vars)).toEqual(
      expect.arrayContaining(['COORDINATOR_TABLE', 'STUDIES_TABLE', 'FILES_TABLE']),
    );
  });
});

describe('backups', () => {
  it('backs up every table and the files bucket daily, kept 35 days in a vault of its own', () => {
    const stateful = base.stateful;
    const plans = Object.values(stateful.findResources('AWS::Backup::BackupPlan'));
    expect(plans).toHaveLength(1);
    const [rule] = plans[0].Properties.BackupPlan.BackupPlanRule;
    expect(rule).toMatchObject({
      ScheduleExpression: 'cron(0 3 * * ? *)',
      Lifecycle: { DeleteAfterDays: 35 },
    });
    const [selection] = Object.values(stateful.findResources('AWS::Backup::BackupSelection'));
    const resources = JSON.stringify(selection.Properties.BackupSelection.Resources);
    for (const key of Object.keys(TABLES) as TableKey[])
      expect(resources).toContain(logicalId(base.built.stateful.tables[key]));
    expect(resources).toContain(logicalId(base.built.stateful.filesBucket));
    expect(Object.keys(stateful.findResources('AWS::Backup::BackupVault'))).toHaveLength(1);
  });

  it('versions the files bucket and keeps what a delete leaves behind for noncurrentVersionDays (30)', () => {
    const bucket = base.stateful.toJSON().Resources[logicalId(base.built.stateful.filesBucket)].Properties;
    expect(bucket.VersioningConfiguration).toEqual({ Status: 'Enabled' });
    const rules = bucket.LifecycleConfiguration.Rules;
    expect(rules).toContainEqual(
      expect.objectContaining({
        Id: 'NoncurrentVersions',
        NoncurrentVersionExpiration: { NoncurrentDays: 30 },
        ExpiredObjectDeleteMarker: true,
        Status: 'Enabled',
      }),
    );
  });

  it('is a setting: backups=false leaves the plan out; the noncurrent days are one too', () => {
    expect(variant.stateful.findResources('AWS::Backup::BackupPlan')).toEqual({});
    const bucket =
      variant.stateful.toJSON().Resources[logicalId(variant.built.stateful.filesBucket)].Properties;
    expect(bucket.LifecycleConfiguration.Rules).toContainEqual(
      expect.objectContaining({ NoncurrentVersionExpiration: { NoncurrentDays: 7 } }),
    );
  });
});

describe('audit', () => {
  const logGroups = (s: Synth) =>
    [s.built.coordinator, s.built.files, s.built.migrations].flatMap((stack) =>
      Object.values(templateOf(stack).findResources('AWS::Logs::LogGroup')),
    );

  it('keeps every log group a year by default, and when its stack is deleted', () => {
    const groups = logGroups(base);
    expect(groups.length).toBeGreaterThan(20);
    for (const g of groups) {
      expect(g.Properties.RetentionInDays).toBe(365);
      expect(g.DeletionPolicy).toBe('Retain');
    }
  });

  it('takes the log and event retention from settings; removalPolicy=destroy lets the logs go with the stacks', () => {
    for (const g of logGroups(variant)) {
      expect(g.Properties.RetentionInDays).toBe(90);
      expect(g.DeletionPolicy).toBe('Delete');
    }
    const envOf = (s: Synth) =>
      s.coordinator.toJSON().Resources[logicalId(s.built.coordinator.functions.Reconciler.fn)].Properties
        .Environment.Variables;
    expect(envOf(base).EVENT_RETENTION_DAYS).toBe('0');
    expect(envOf(variant).EVENT_RETENTION_DAYS).toBe('400');
  });
});

describe('restored tables', () => {
  it('switch the functions, the migration step and the stream trigger to the restored table; the own table stays', () => {
    const name = RESTORED.coordinator.tableName;
    const fns = Object.values(variant.coordinator.findResources('AWS::Lambda::Function')).filter(
      (f) => f.Properties.Environment?.Variables?.COORDINATOR_TABLE,
    );
    expect(fns.length).toBeGreaterThan(5);
    for (const f of fns) expect(f.Properties.Environment.Variables.COORDINATOR_TABLE).toBe(name);
    const migrate = Object.values(
      templateOf(variant.built.migrations).findResources('AWS::Lambda::Function'),
    ).find((f) => f.Properties.Environment?.Variables?.COORDINATOR_TABLE);
    expect(migrate?.Properties.Environment.Variables.COORDINATOR_TABLE).toBe(name);
    const [mapping] = Object.values(variant.coordinator.findResources('AWS::Lambda::EventSourceMapping'));
    expect(mapping.Properties.EventSourceArn).toBe(RESTORED.coordinator.streamArn);
    // The stack's own table is still there (retained data is never deleted by a switch).
    expect(Object.keys(variant.stateful.findResources('AWS::DynamoDB::Table'))).toHaveLength(3);
  });

  it('are refused without the stream a table that has one needs', () => {
    const app = new App({
      context: { restoredTables: JSON.stringify({ coordinator: { tableName: 'x-restored' } }) },
    });
    expect(() => readSettings(new Stack(app, 'S').node)).toThrow(/restoredTables\.coordinator\.streamArn/);
  });
});

describe('new indexes, one per table and deploy', () => {
  it('declares the indexes a table has and the next one it lacks; without deployedIndexes, all of them', () => {
    const gsis = (s: Synth, key: TableKey) =>
      (
        s.stateful.toJSON().Resources[logicalId(s.built.stateful.ownTables[key])].Properties
          .GlobalSecondaryIndexes ?? []
      ).map((i: { IndexName: string }) => i.IndexName);
    expect(gsis(variant, 'coordinator')).toEqual(['gsi1', 'gsi2', 'gsi3']);
    expect(gsis(variant, 'studies')).toEqual(['gsi1']);
    expect(gsis(variant, 'files')).toEqual(TABLES.files.indexes.map((i) => i.indexName));
    expect(gsis(base, 'coordinator')).toEqual(TABLES.coordinator.indexes.map((i) => i.indexName));
  });
});

describe("rotating the coordinator's own client", () => {
  it('deploys both slots side by side, the first listed in use: its id for the functions, its secret copied', () => {
    const auth = variant.built.auth!.auth;
    expect(auth.coordinatorClients.map((c) => c.node.id)).toEqual([
      'CoordinatorClientB',
      'CoordinatorClient',
    ]);
    expect(auth.coordinatorClient.node.id).toBe('CoordinatorClientB');
    const inUse = logicalId(auth.coordinatorClient);
    const step =
      variant.coordinator.toJSON().Resources[logicalId(variant.built.coordinator.functions.ReleaseStep.fn)];
    expect(JSON.stringify(step.Properties.Environment.Variables.COORDINATOR_CLIENT_ID)).toContain(inUse);
    const outputs = variant.auth!.toJSON().Outputs;
    expect(JSON.stringify(outputs.CoordinatorClientIds.Value)).toContain(inUse);
    // Without the setting, one client under the logical id it always had: a deployment that never rotated keeps it.
    expect(base.built.auth!.auth.coordinatorClients.map((c) => c.node.id)).toEqual(['CoordinatorClient']);
  });
});
