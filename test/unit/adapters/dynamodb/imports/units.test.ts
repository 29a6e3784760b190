import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { DynamoImportStore } from '#functions/adapters/dynamodb/imports/index.js';
import type { CoordinatorEvent, Release, ReleaseNote, Task } from '#functions/coordinator/model.js';

/**
 * How the import writes (units.ts, with the items of records.ts): a read of the keys first, then transactions of at
 * most 100 items with their counts, each record only where its id is free.
 *
 * @covers functions/adapters/dynamodb/imports/units.ts
 * @covers functions/adapters/dynamodb/imports/records.ts
 */

const ddb = mockClient(DynamoDBDocumentClient);
const doc = DynamoDBDocumentClient.from(
  new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
);
const tables = { coordinator: 'c', studies: 's' };
afterEach(() => ddb.reset());

const event = (n: number): CoordinatorEvent => ({
  id: `EV_${String(n).padStart(8, '0')}`,
  eventType: 'info',
  message: `m${n}`,
  releaseId: 'RE_00000001',
  taskId: `TA_${String(n % 7).padStart(8, '0')}`,
  taskServiceId: 'TS_00000001',
  studyId: null,
  source: 'original',
  createdAt: `2019-01-01T00:00:${String(n % 60).padStart(2, '0')}.000000Z`,
});

type Tx = { Put?: any; Update?: any; ConditionCheck?: any };
const transactions = () =>
  ddb.commandCalls(TransactWriteCommand).map((c) => (c.args[0].input.TransactItems ?? []) as Tx[]);

/** DynamoDB's cancellation: one reason per item, `ConditionalCheckFailed` (with the item, ALL_OLD) where it failed. */
function cancelled(items: Tx[], failed: (i: Tx) => Record<string, unknown> | true | undefined) {
  return Object.assign(new Error('cancelled'), {
    name: 'TransactionCanceledException',
    CancellationReasons: items.map((i) => {
      const f = failed(i);
      if (!f) return { Code: 'None' };
      return { Code: 'ConditionalCheckFailed', ...(f === true ? {} : { Item: marshall(f) }) };
    }),
  });
}

describe('the import writes', () => {
  it('skips what a read finds here: the same record is present, another under its id is taken', async () => {
    ddb.on(BatchGetCommand).resolves({
      Responses: {
        c: [
          { pk: 'EV#EV_00000001', sk: 'EV', createdAt: event(1).createdAt },
          { pk: 'EV#EV_00000002', sk: 'EV', createdAt: '2030-01-01T00:00:00.000000Z' },
        ],
      },
    });
    const out = await new DynamoImportStore(doc, tables).writeEvents(
      [{ event: event(1) }, { event: event(2) }],
      false,
    );
    expect(out.map((o) => o.status)).toEqual(['present', 'taken']);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
  });

  it('writes the rest in transactions of at most 100 items, each record with its counts, only where it is free', async () => {
    ddb.on(BatchGetCommand).resolves({ Responses: { c: [] } });
    ddb.on(TransactWriteCommand).resolves({});
    const events = Array.from({ length: 150 }, (_, n) => ({ event: event(n) }));
    const out = await new DynamoImportStore(doc, tables).writeEvents(events, false);
    expect(out.every((o) => o.status === 'written')).toBe(true);
    const txs = transactions();
    expect(txs.length).toBeGreaterThan(1);
    const puts = txs.flat().filter((i) => i.Put);
    expect(puts).toHaveLength(150);
    for (const p of puts) expect(p.Put.ConditionExpression).toBe('attribute_not_exists(pk)');
    for (const tx of txs) {
      expect(tx.length).toBeLessThanOrEqual(100);
      // The all-events counter (CNT#EV#<shard>) moves by exactly the events of its transaction.
      const all = tx.filter((i) => /^CNT#EV#\d\d$/.test(i.Update?.Key.pk ?? ''));
      expect(all).toHaveLength(1);
      expect(all[0].Update.ExpressionAttributeValues[':d']).toBe(tx.filter((i) => i.Put).length);
    }
  });

  it('judges a record another writer put meanwhile from what the cancellation returns, and writes the others', async () => {
    ddb.on(BatchGetCommand).resolves({ Responses: { c: [] } });
    ddb
      .on(TransactWriteCommand)
      .callsFakeOnce((input: { TransactItems: Tx[] }) => {
        throw cancelled(input.TransactItems, (i) =>
          i.Put?.Item.id === 'EV_00000001' && i.Put.Item.sk === 'EV' ? { ...i.Put.Item } : undefined,
        );
      })
      .resolves({});
    const out = await new DynamoImportStore(doc, tables).writeEvents(
      [{ event: event(1) }, { event: event(2) }],
      false,
    );
    expect(out.map((o) => o.status)).toEqual(['present', 'written']);
    const [first, second] = transactions();
    expect(first.filter((i) => i.Put)).toHaveLength(2);
    expect(second.filter((i) => i.Put).map((i) => i.Put.Item.id)).toEqual(['EV_00000002']);
  });

  it('writes a published release whose version another release holds without the claim, and says so', async () => {
    ddb.on(BatchGetCommand).resolves({ Responses: { c: [] } });
    ddb
      .on(TransactWriteCommand)
      .callsFakeOnce((input: { TransactItems: Tx[] }) => {
        throw cancelled(input.TransactItems, (i) =>
          i.Put?.Item.pk === 'VERSION#0.2.0' ? { releaseId: 'RE_OTHER001' } : undefined,
        );
      })
      .resolves({});
    const release: Release = {
      id: 'RE_00000001',
      name: 'r',
      description: '',
      state: 'published',
      studies: ['SD_00000001'],
      version: '0.2.0',
      createdAt: '2019-01-01T00:00:00.000000Z',
      tags: [],
      author: 'a',
      isMajor: false,
    };
    const task: Task = {
      id: 'TA_00000001',
      releaseId: release.id,
      taskServiceId: 'TS_00000001',
      serviceName: 's',
      state: 'published',
      progress: 100,
      createdAt: release.createdAt,
    };
    const [out] = await new DynamoImportStore(doc, tables).writeReleases(
      [{ release, tasks: [task], taskEvents: new Map() }],
      false,
    );
    expect(out.release).toEqual({
      id: 'RE_00000001',
      status: 'written',
      notes: [expect.stringMatching(/version 0.2.0 is published by RE_OTHER001 here too/)],
    });
    expect(out.tasks).toEqual([{ id: 'TA_00000001', status: 'written' }]);
    const last = transactions().at(-1) ?? [];
    const keys = last.map((i) => (i.Put ?? i.Update)?.Key?.pk ?? i.Put?.Item.pk);
    expect(keys).not.toContain('VERSION#0.2.0');
    // The release, its view and 8 shards, its place in the study's timeline, the task, their counts and the
    // registry's tasks per service, in one transaction.
    expect(last.filter((i) => i.Put?.Item.sk?.startsWith('RE#V'))).toHaveLength(9);
    expect(last.some((i) => i.Put?.Item.pk === 'RS#SD_00000001')).toBe(true);
    expect(last.find((i) => i.Update?.Key.pk === 'REGISTRY')?.Update.ExpressionAttributeNames).toEqual({
      '#t0': 'tasks:TS_00000001',
    });
  });

  it("puts two notes of one release in two transactions: each adds itself to the release's list", async () => {
    ddb.on(BatchGetCommand).resolves({ Responses: { c: [] } });
    ddb.on(TransactWriteCommand).resolves({});
    const note = (id: string): ReleaseNote => ({
      id,
      releaseId: 'RE_00000001',
      studyId: null,
      description: 'd',
      author: 'a',
      createdAt: '2019-01-01T00:00:00.000000Z',
    });
    const out = await new DynamoImportStore(doc, tables).writeNotes(
      [note('RN_00000001'), note('RN_00000002')],
      false,
    );
    expect(out.map((o) => o.status)).toEqual(['written', 'written']);
    expect(transactions()).toHaveLength(2);
  });

  it('writes nothing in a dry run', async () => {
    ddb.on(BatchGetCommand).resolves({ Responses: { c: [] } });
    const out = await new DynamoImportStore(doc, tables).writeEvents([{ event: event(1) }], true);
    expect(out).toEqual([{ id: 'EV_00000001', status: 'written' }]);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
  });
});
