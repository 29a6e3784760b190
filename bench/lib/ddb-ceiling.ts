import { randomBytes } from 'node:crypto';
import { Agent } from 'node:http';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { createTables, localClient } from '#local/dynamodb-local.js';

/**
 * The raw DynamoDB Local ceiling, measured as docs/benchmarks.md describes: a DocumentClient with a
 * keep-alive agent, N async workers calling one operation back-to-back, latency per call. It runs against the same
 * JVM (and the same on-disk database) as the API under test, in a table of its own.
 */
/** EventTransaction: what POST /events writes (a new item, two sharded counter ADDs, a check on an existing item). */
export type CeilingOp = 'GetItem' | 'Query' | 'TransactWrite2' | 'EventTransaction';

export interface LoopResult {
  ops: number;
  p50: number;
  p99: number;
  calls: number;
  errors: number;
}

const SEED_ITEMS = 1000;
const PARTITIONS = 10;
// ~500 bytes by DynamoDB sizing, like the ceilings' items and close to a release item.
const payload = () => randomBytes(210).toString('hex');

export class DdbCeiling {
  private readonly doc: DynamoDBDocumentClient;
  private readonly table: string;
  private seq = 0;

  constructor(
    private readonly endpoint: string,
    private readonly prefix = `ceiling${randomBytes(3).toString('hex')}`,
  ) {
    this.table = `${prefix}-Coordinator`;
    this.doc = benchDocumentClient(endpoint);
  }

  /** Creates the table and 1,000 GetItem targets spread over 10 gsi1 partitions. */
  async seed(): Promise<void> {
    const admin = localClient(this.endpoint);
    await createTables(admin, this.prefix);
    admin.destroy();
    for (let i = 0; i < SEED_ITEMS; i += 25) {
      const items = Array.from({ length: 25 }, (_, j) => this.item(`item#${i + j}`, i + j));
      await this.doc.send(
        new BatchWriteCommand({
          RequestItems: { [this.table]: items.map((Item) => ({ PutRequest: { Item } })) },
        }),
      );
    }
  }

  private item(pk: string, n: number) {
    return {
      pk,
      sk: 'A',
      gsi1pk: `part#${n % PARTITIONS}`,
      gsi1sk: String(n).padStart(8, '0'),
      name: `item ${n}`,
      data: payload(),
    };
  }

  private op(op: CeilingOp): () => Promise<unknown> {
    switch (op) {
      case 'GetItem':
        return () =>
          this.doc.send(
            new GetCommand({
              TableName: this.table,
              Key: { pk: `item#${this.seq++ % SEED_ITEMS}`, sk: 'A' },
            }),
          );
      case 'Query':
        return () =>
          this.doc.send(
            new QueryCommand({
              TableName: this.table,
              IndexName: 'gsi1',
              KeyConditionExpression: 'gsi1pk = :p',
              ExpressionAttributeValues: { ':p': `part#${this.seq++ % PARTITIONS}` },
              ScanIndexForward: false,
              Limit: 10,
            }),
          );
      case 'TransactWrite2':
        return () => {
          const n = this.seq++;
          const a = this.item(`tx#${n}#${randomBytes(4).toString('hex')}`, n);
          const b = this.item(`tx#${n}#${randomBytes(4).toString('hex')}`, n);
          return this.doc.send(
            new TransactWriteCommand({
              TransactItems: [
                { Put: { TableName: this.table, Item: a } },
                { Put: { TableName: this.table, Item: b } },
              ],
            }),
          );
        };
      case 'EventTransaction':
        return () => {
          const n = this.seq++;
          const add = (name: string, shards: number) => ({
            Update: {
              TableName: this.table,
              Key: { pk: `cnt#${name}#${n % shards}`, sk: 'CNT' },
              UpdateExpression: 'ADD n :one',
              ExpressionAttributeValues: { ':one': 1 },
            },
          });
          return this.doc.send(
            new TransactWriteCommand({
              TransactItems: [
                {
                  Put: {
                    TableName: this.table,
                    Item: this.item(`ev#${n}#${randomBytes(4).toString('hex')}`, n),
                  },
                },
                add('events', 8),
                add('release', 4), // every request names the same release, as the route measured does
                {
                  ConditionCheck: {
                    TableName: this.table,
                    Key: { pk: `item#${n % SEED_ITEMS}`, sk: 'A' },
                    ConditionExpression: 'attribute_exists(pk)',
                  },
                },
              ],
            }),
          );
        };
    }
  }

  /** `concurrency` workers for `seconds`; returns ops/s and latency percentiles (ms). */
  loop(op: CeilingOp, concurrency: number, seconds: number): Promise<LoopResult> {
    return loopOf(this.op(op), concurrency, seconds);
  }

  destroy(): void {
    this.doc.destroy();
  }
}

/** Any async call driven like the ceiling: `concurrency` workers back-to-back for `seconds`. */
export async function loopOf(
  call: () => Promise<unknown>,
  concurrency: number,
  seconds: number,
): Promise<LoopResult> {
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const worker = async () => {
    while (performance.now() < end) {
      const start = performance.now();
      try {
        await call();
        latencies.push(performance.now() - start);
      } catch {
        errors++;
      }
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
  return { ops: latencies.length / elapsed, p50: pct(50), p99: pct(99), calls: latencies.length, errors };
}

/** A DocumentClient like the functions' (functions/adapters/aws.ts) for an explicit endpoint, `maxSockets` open. */
export function benchDocumentClient(endpoint: string, maxSockets = 64): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
      requestHandler: new NodeHttpHandler({ httpAgent: new Agent({ keepAlive: true, maxSockets }) }),
    }),
    { marshallOptions: { removeUndefinedValues: true } },
  );
}
