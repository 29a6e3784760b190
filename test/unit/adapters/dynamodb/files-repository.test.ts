import { DynamoDBClient, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { DynamoFileRepository } from '#functions/adapters/dynamodb/files-repository.js';
import type { AuditRecord, FileRecord, VersionRecord } from '#functions/files/model.js';

/**
 * The totals behind DRS service-info (`objectCount`, `totalObjectSize`): changed only inside the transactions that
 * make a version available or delete one, conditioned on the state each version was read in.
 */
const ddb = mockClient(DynamoDBDocumentClient);
const doc = DynamoDBDocumentClient.from(
  new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
);
const repo = new DynamoFileRepository(doc, 'files');
afterEach(() => ddb.reset());

const audit: AuditRecord = {
  id: 'a',
  at: '2026-01-01T00:00:00.000000Z',
  action: 'version.delete',
  method: 'bearer',
  actor: 'admin',
  dev_token: null,
  study_id: 'SD_AAAAAAAA',
  file_id: 'SF_BBBBBBBB',
  version_id: null,
  source_ip: null,
  user_agent: null,
};
const file: FileRecord = {
  id: 'SF_BBBBBBBB',
  study_id: 'SD_AAAAAAAA',
  name: 'f',
  description: null,
  created_at: audit.at,
  created_by: 'u',
};
const version = (n: number, state: VersionRecord['state'], size = 10): VersionRecord => ({
  id: `FV_${String(n).padStart(8, '0')}`,
  file_id: file.id,
  study_id: file.study_id,
  key: `k${n}`,
  file_name: 'f',
  size,
  content_type: 'application/octet-stream',
  sha256: '0'.repeat(64),
  state,
  created_at: audit.at,
  created_by: 'u',
  confirmed_at: state === 'pending' ? null : audit.at,
  multipart: null,
});

type Item = NonNullable<TransactWriteCommand['input']['TransactItems']>[number];
const itemsOf = (call: number): Item[] =>
  ddb.commandCalls(TransactWriteCommand)[call].args[0].input.TransactItems!;
const totalsOf = (items: Item[]) =>
  items
    .filter((i) => (i.Update?.Key as { pk?: string } | undefined)?.pk === 'TOTALS#AVAILABLE')
    .map((i) => i.Update!.ExpressionAttributeValues);
const cancelled = (codes: string[]) =>
  new TransactionCanceledException({
    message: 'cancelled',
    $metadata: {},
    CancellationReasons: codes.map((Code) => ({ Code })),
  });

/** The file item a confirmation reads first (its pending flags), already confirmed once. */
const confirmedFile = () =>
  ddb.on(GetCommand).resolves({ Item: { pk: 'FILE#SF_BBBBBBBB', sk: 'FILE', ...file, pendingVersions: 1 } });

describe('the totals of available versions', () => {
  it('grow by one version and its size in the transaction that confirms an upload', async () => {
    ddb.on(TransactWriteCommand).resolves({});
    confirmedFile();
    expect(
      await repo.finishUpload(version(1, 'pending', 1234), { state: 'available', confirmedAt: 'now' }, audit),
    ).toBe(true);
    const items = itemsOf(0);
    expect(totalsOf(items)).toEqual([{ ':n': 1, ':b': 1234 }]);
    const update = items.find(
      (i) => (i.Update?.Key as { pk?: string } | undefined)?.pk === 'TOTALS#AVAILABLE',
    )!.Update!;
    expect(update.UpdateExpression).toBe('ADD versions :n, #bytes :b');
    expect((update.Key as { sk: string }).sk).toMatch(/^SHARD#\d\d$/);
  });

  it('do not change when an upload fails its check', async () => {
    ddb.on(TransactWriteCommand).resolves({});
    confirmedFile();
    await repo.finishUpload(version(1, 'pending'), { state: 'failed', confirmedAt: 'now' }, audit);
    expect(totalsOf(itemsOf(0))).toEqual([]);
  });

  it('do not change when a multipart upload is handed to the worker, and grow when the worker makes it available', async () => {
    ddb.on(TransactWriteCommand).resolves({});
    confirmedFile();
    const v = version(1, 'pending', 4096);
    await repo.finishUpload(v, { state: 'verifying', confirmedAt: 'now' }, audit);
    expect(totalsOf(itemsOf(0))).toEqual([]);
    const verifying = { ...v, state: 'verifying' as const };
    await repo.finishUpload(verifying, { state: 'available', confirmedAt: 'later', from: 'verifying' }, null);
    const items = itemsOf(1);
    expect(items[0].Update?.ExpressionAttributeValues).toMatchObject({
      ':from': 'verifying',
      ':state': 'available',
    });
    expect(totalsOf(items)).toEqual([{ ':n': 1, ':b': 4096 }]);
    await repo.finishUpload(verifying, { state: 'failed', confirmedAt: 'later', from: 'verifying' }, null);
    expect(totalsOf(itemsOf(2))).toEqual([]);
  });

  it('shrink when an available version is deleted, and the delete is conditioned on the state it was read in', async () => {
    ddb.on(TransactWriteCommand).resolves({});
    await repo.deleteVersion(version(1, 'available', 50), audit);
    const items = itemsOf(0);
    expect(items[0].Delete).toMatchObject({
      ConditionExpression: '#state = :state',
      ExpressionAttributeValues: { ':state': 'available' },
    });
    expect(totalsOf(items)).toEqual([{ ':n': -1, ':b': -50 }]);
    await repo.deleteVersion(version(2, 'pending'), audit);
    expect(totalsOf(itemsOf(1))).toEqual([]);
  });

  it('follow a version confirmed while it was being deleted: read again, then delete it as available', async () => {
    ddb
      .on(TransactWriteCommand)
      .rejectsOnce(cancelled(['ConditionalCheckFailed', 'None']))
      .resolves({});
    ddb.on(GetCommand).resolves({
      Item: { pk: 'FILE#SF_BBBBBBBB', sk: 'VERSION#FV_00000001', ...version(1, 'available', 70) },
    });
    await repo.deleteVersion(version(1, 'pending', 70), audit);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(2);
    expect(totalsOf(itemsOf(0))).toEqual([]);
    expect(totalsOf(itemsOf(1))).toEqual([{ ':n': -1, ':b': -70 }]);
  });

  it('do nothing when the version is already gone', async () => {
    ddb.on(TransactWriteCommand).rejects(cancelled(['ConditionalCheckFailed', 'None', 'None']));
    ddb.on(GetCommand).resolves({});
    await repo.deleteVersion(version(1, 'available'), audit);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(1);
  });

  it('shrink by every available version of a deleted file, with their key items, at most 49 versions per transaction', async () => {
    ddb.on(TransactWriteCommand).resolves({});
    const versions = Array.from({ length: 150 }, (_, i) => version(i, i < 120 ? 'available' : 'failed', i));
    expect(await repo.deleteVersions(file.id, versions)).toBe(true);
    const calls = ddb.commandCalls(TransactWriteCommand);
    expect(calls).toHaveLength(4);
    // Each available version goes with its AVAIL# key item: 49 versions, 49 key items, the totals, the file's counts.
    expect(itemsOf(0).filter((i) => i.Delete)).toHaveLength(98);
    expect(itemsOf(0)).toHaveLength(100);
    expect(totalsOf(itemsOf(0))).toEqual([{ ':n': -49, ':b': -((48 * 49) / 2) }]);
    const third = versions.slice(98, 147);
    expect(itemsOf(2).filter((i) => i.Delete)).toHaveLength(49 + 22);
    expect(totalsOf(itemsOf(2))).toEqual([
      { ':n': -22, ':b': -third.filter((v) => v.state === 'available').reduce((s, v) => s + v.size, 0) },
    ]);
    expect(totalsOf(itemsOf(3))).toEqual([]);
    // Then the file itself, the study's file count and the audit record with its counts.
    ddb.on(GetCommand).resolves({ Item: { pk: 'FILE#SF_BBBBBBBB', sk: 'FILE', ...file } });
    await repo.deleteFile(file, audit);
    const last = itemsOf(4).map((i) => Object.keys(i)[0]);
    expect(last.slice(0, 3)).toEqual(['Delete', 'Update', 'Put']);
    expect(new Set(last.slice(3))).toEqual(new Set(['Update']));
  });

  it('are read as the sum of their shards, with one query and no scan', async () => {
    ddb.on(QueryCommand).resolves({
      Items: [
        { pk: 'TOTALS#AVAILABLE', sk: 'SHARD#03', versions: 4, bytes: 400 },
        { pk: 'TOTALS#AVAILABLE', sk: 'SHARD#11', versions: -1, bytes: -100 },
        { pk: 'TOTALS#AVAILABLE', sk: 'SHARD#12', versions: 2, bytes: 20 },
      ],
    });
    expect(await repo.availableTotals()).toEqual({ versions: 5, bytes: 320 });
    expect(ddb.calls()).toHaveLength(1);
    expect(ddb.commandCalls(QueryCommand)[0].args[0].input).toMatchObject({
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': 'TOTALS#AVAILABLE' },
      ConsistentRead: true,
    });
  });
});
