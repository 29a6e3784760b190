import { DescribeTableCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '#local/dynamodb-local.js';
import { startStreamTriggers, TableStreamReader } from '#local/dynamodb-streams.js';
import { useLocalTables } from '../helpers/tables.js';

/**
 * The local stand-in for Lambda's DynamoDB event source mapping, on DynamoDB Local's own streams: the coordinator
 * table has one (lib/table-definitions.ts), and the reader hands out what was written after it started, in order.
 */
let table: string;
const client = () => localClient(inject('ddbEndpoint'));

async function put(n: number) {
  const c = client();
  await c.send(
    new PutItemCommand({
      TableName: table,
      Item: { pk: { S: `X#${n}` }, sk: { S: 'X' }, n: { N: String(n) } },
    }),
  );
  c.destroy();
}

const until = async (cond: () => boolean, what: string) => {
  for (const end = Date.now() + 20_000; !cond(); ) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

beforeAll(async () => {
  table = (await useLocalTables({ streams: true })).COORDINATOR_TABLE;
});

describe('TableStreamReader', () => {
  it('gives the new and old images of what was written after it started, and nothing from before', async () => {
    const c = client();
    const described = await c.send(new DescribeTableCommand({ TableName: table }));
    expect(described.Table?.StreamSpecification).toMatchObject({
      StreamEnabled: true,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    });
    // Started on a stream with no record yet: DynamoDB Local's LATEST iterator there needs the reader's care.
    const reader = new TableStreamReader({ endpoint: inject('ddbEndpoint'), tableName: table });
    await reader.start();
    expect(await reader.read()).toEqual([]);
    await put(1);
    await c.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { pk: { S: 'X#1' }, sk: { S: 'X' } },
        UpdateExpression: 'SET n = n + :one',
        ExpressionAttributeValues: { ':one': { N: '1' } },
      }),
    );
    const records = await reader.read();
    expect(records.map((r) => [r.eventName, r.dynamodb?.OldImage?.n?.N, r.dynamodb?.NewImage?.n?.N])).toEqual(
      [
        ['INSERT', undefined, '1'],
        ['MODIFY', '1', '2'],
      ],
    );
    expect(records[0]).toMatchObject({
      eventSource: 'aws:dynamodb',
      dynamodb: { Keys: { pk: { S: 'X#1' } } },
    });
    expect(await reader.read()).toEqual([]);
    reader.destroy();

    const late = new TableStreamReader({ endpoint: inject('ddbEndpoint'), tableName: table });
    await late.start();
    await put(2);
    expect((await late.read()).map((r) => r.dynamodb?.NewImage?.n?.N)).toEqual(['2']);
    late.destroy();
    c.destroy();
  });
});

describe('startStreamTriggers', () => {
  it('hands the records in order, in batches of at most the batch size, and tries a failed batch again', async () => {
    const batches: number[][] = [];
    let calls = 0;
    const triggers = await startStreamTriggers(
      inject('ddbEndpoint'),
      [
        {
          name: 'probe',
          tableName: table,
          handle: async (event: DynamoDBStreamEvent) => {
            calls++;
            if (calls === 1) throw new Error('a batch that fails once');
            batches.push(event.Records.map((r) => Number(r.dynamodb?.NewImage?.n?.N)));
          },
        },
      ],
      { everyMs: 20, batchSize: 3 },
    );
    try {
      for (let n = 10; n < 17; n++) await put(n);
      await until(() => batches.flat().length >= 7, 'seven records');
      expect(batches.flat()).toEqual([10, 11, 12, 13, 14, 15, 16]);
      expect(Math.max(...batches.map((b) => b.length))).toBeLessThanOrEqual(3);
      // The first batch was handed twice: once failing, once taken.
      expect(calls).toBe(batches.length + 1);
    } finally {
      await triggers.stop();
    }
  });

  it('hands several keys at once, the records of each key in order, when batches run in parallel', async () => {
    const seen = new Map<string, number[]>();
    let inFlight = 0;
    let most = 0;
    const triggers = await startStreamTriggers(
      inject('ddbEndpoint'),
      [
        {
          name: 'parallel-probe',
          tableName: table,
          handle: async (event: DynamoDBStreamEvent) => {
            most = Math.max(most, ++inFlight);
            await new Promise((r) => setTimeout(r, 30));
            for (const r of event.Records) {
              const key = String(r.dynamodb?.Keys?.pk?.S);
              seen.set(key, [...(seen.get(key) ?? []), Number(r.dynamodb?.NewImage?.n?.N)]);
            }
            inFlight--;
          },
        },
      ],
      { everyMs: 200, batchSize: 2, parallel: 4 },
    );
    try {
      const c = client();
      const keys = ['P#a', 'P#b', 'P#c', 'P#d'];
      for (let n = 1; n <= 3; n++)
        await Promise.all(
          keys.map((k) =>
            c.send(
              new PutItemCommand({
                TableName: table,
                Item: { pk: { S: k }, sk: { S: 'X' }, n: { N: String(n) } },
              }),
            ),
          ),
        );
      c.destroy();
      await until(() => [...seen.values()].flat().length >= 12, 'twelve records');
      for (const k of keys) expect(seen.get(k)).toEqual([1, 2, 3]);
      expect(most).toBeGreaterThan(1);
    } finally {
      await triggers.stop();
    }
  });
});
