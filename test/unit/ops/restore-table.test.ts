import {
  DescribeContinuousBackupsCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  RestoreTableToPointInTimeCommand,
  UpdateContinuousBackupsCommand,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { restoreTable, tableKeyOf } from '#ops/restore-table.js';

const ddb = mockClient(DynamoDBClient);
const SOURCE = 'ReleaseCoordinator-Stateful-TablesCoordinator1A2B3C4D-1XYZ9ABCDEF0';
const STREAM = `arn:aws:dynamodb:eu-west-1:123456789012:table/${SOURCE}-restored-202611301000/stream/2026-11-30T12:00:00.000`;

beforeEach(() => {
  ddb.on(DescribeContinuousBackupsCommand).resolves({
    ContinuousBackupsDescription: {
      ContinuousBackupsStatus: 'ENABLED',
      PointInTimeRecoveryDescription: {
        PointInTimeRecoveryStatus: 'ENABLED',
        EarliestRestorableDateTime: new Date('2026-11-01T00:00:00Z'),
        LatestRestorableDateTime: new Date('2026-11-30T11:55:00Z'),
      },
    },
  });
  ddb.on(DescribeTableCommand).resolves({ Table: { TableStatus: 'ACTIVE', LatestStreamArn: STREAM } });
  ddb.on(DescribeTimeToLiveCommand).resolves({ TimeToLiveDescription: { AttributeName: 'ttl' } });
  ddb.on(UpdateTableCommand).resolves({ TableDescription: {} });
});
afterEach(() => ddb.reset());

describe('npm run restore', () => {
  it('restores into a new table and sets what a restore does not carry over: PITR, TTL, deletion protection, stream', async () => {
    const out = await restoreTable(new DynamoDBClient({ region: 'eu-west-1' }), {
      table: SOURCE,
      to: new Date('2026-11-30T10:00:00Z'),
    });
    const restore = ddb.commandCalls(RestoreTableToPointInTimeCommand)[0].args[0].input;
    expect(restore).toEqual({
      SourceTableName: SOURCE,
      TargetTableName: `${SOURCE}-restored-202611301000`,
      RestoreDateTime: new Date('2026-11-30T10:00:00Z'),
      BillingModeOverride: 'PAY_PER_REQUEST',
      SSESpecificationOverride: { Enabled: true, SSEType: 'KMS' },
    });
    const target = `${SOURCE}-restored-202611301000`;
    expect(ddb.commandCalls(UpdateContinuousBackupsCommand)[0].args[0].input).toEqual({
      TableName: target,
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
    expect(ddb.commandCalls(UpdateTimeToLiveCommand)[0].args[0].input).toEqual({
      TableName: target,
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
    });
    const updates = ddb.commandCalls(UpdateTableCommand).map((c) => c.args[0].input);
    expect(updates).toContainEqual({ TableName: target, DeletionProtectionEnabled: true });
    expect(updates).toContainEqual({
      TableName: target,
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
    });
    expect(out).toEqual({
      key: 'coordinator',
      source: SOURCE,
      tableName: target,
      restoredTo: '2026-11-30T10:00:00.000Z',
      streamArn: STREAM,
      setting: { coordinator: { tableName: target, streamArn: STREAM } },
    });
  });

  it('refuses a time outside the recovery window, naming the window, and restores nothing', async () => {
    await expect(
      restoreTable(new DynamoDBClient({ region: 'eu-west-1' }), {
        table: SOURCE,
        to: new Date('2026-10-01T00:00:00Z'),
      }),
    ).rejects.toThrow(/from 2026-11-01T00:00:00.000Z to 2026-11-30T11:55:00.000Z/);
    expect(ddb.commandCalls(RestoreTableToPointInTimeCommand)).toHaveLength(0);
  });

  it('gives a studies table no stream, and tells the tables apart by name', async () => {
    const studies = 'ReleaseCoordinator-Stateful-TablesStudies9F8E7D6C-QWERTY123456';
    const out = await restoreTable(new DynamoDBClient({ region: 'eu-west-1' }), {
      table: studies,
      to: 'latest',
    });
    expect(out.setting).toEqual({ studies: { tableName: out.tableName } });
    expect(ddb.commandCalls(RestoreTableToPointInTimeCommand)[0].args[0].input.UseLatestRestorableTime).toBe(
      true,
    );
    expect(tableKeyOf('local-Files')).toBe('files');
    expect(tableKeyOf('something-else')).toBeUndefined();
  });
});
