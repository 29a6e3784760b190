/**
 * `npm run bench:txcost`: what a TransactWriteItems costs on DynamoDB Local, per transaction and per item, and what
 * happens when concurrent transactions touch one item. The orchestration's write design (how many task changes go
 * into one transaction, whether the release item may take part in task callbacks) follows from these numbers.
 *
 *   1. Sequential transactions of k new items (Puts with gsi keys, ~300 bytes), k = 1, 2, 10, 25, 50, 100, on disk:
 *      ms per transaction; a least-squares line gives the fixed cost per transaction and the cost per item.
 *   2. The same items as k single PutItems, sequentially and at concurrency 8, for comparison.
 *   3. 32 concurrent transactions that each update one shared item (plus a Put of their own): how many are cancelled
 *      with TransactionConflict on the first attempt.
 *   4. The staging callbacks of the 20 × 50 run (bench:release) without HTTP: 20 releases of 50 tasks, then 1,000
 *      `staged` reports at once through the real use case (`reportTask`) and repositories, in this process; and, for
 *      the floor, 1,000 of the smallest transaction a callback could be (its task and its event, 2 items). Set against
 *      the bound on a whole release (staged p50 <= 2.5 × (2 s of work + floor)), the callbacks alone.
 *
 * A benchmark, not a test: it prints a markdown section and writes it into docs/benchmarks.md (BENCH_WRITE_DOCS).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { DynamoTaskServiceRepository } from '#functions/adapters/dynamodb/task-services.js';
import { freshCredentials } from '#functions/coordinator/service-credentials.js';
import { reportTask } from '#functions/coordinator/task-callback.js';
import { ROOT } from '#local/config.js';
import { createTables, localClient, startDynamoLocal } from '#local/dynamodb-local.js';
import { benchDocumentClient } from './lib/ddb-ceiling.js';
import { fmt, machineInfo, writeSection } from './lib/report.js';
import { minimalTransactionBurst } from './lib/tx-floor.js';

const WRITE_DOCS = process.env.BENCH_WRITE_DOCS !== 'false';
const ROUNDS = Number(process.env.BENCH_TX_ROUNDS ?? 40);
const SIZES = [1, 2, 10, 25, 50, 100];
const TX_TABLE = 'txcost-Coordinator';
const CALLBACK_RELEASES = Number(process.env.BENCH_CALLBACK_RELEASES ?? 20);
const CALLBACK_SERVICES = Number(process.env.BENCH_CALLBACK_SERVICES ?? 50);
const say = (line: string) => process.stdout.write(`${line}\n`);

let seq = 0;
const item = () => {
  const n = seq++;
  return {
    pk: `TX#${n}`,
    sk: 'TX',
    gsi1pk: `P#${n % 16}`,
    gsi1sk: `2026-11-26T00:00:00.${String(n).padStart(6, '0')}Z#TX${n}`,
    message: 'x'.repeat(200),
  };
};

function leastSquares(points: { k: number; ms: number }[]): { fixed: number; perItem: number } {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.k, 0) / n;
  const my = points.reduce((s, p) => s + p.ms, 0) / n;
  const sxy = points.reduce((s, p) => s + (p.k - mx) * (p.ms - my), 0);
  const sxx = points.reduce((s, p) => s + (p.k - mx) ** 2, 0);
  const perItem = sxy / sxx;
  return { fixed: my - perItem * mx, perItem };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'bench-txcost-'));
  const ddb = await startDynamoLocal({ dir });
  const admin = localClient(ddb.endpoint);
  await createTables(admin, 'txcost');
  admin.destroy();
  const doc = benchDocumentClient(ddb.endpoint);
  const table = TX_TABLE;
  try {
    // Warm the JVM.
    for (let i = 0; i < 200; i++)
      await doc.send(
        new TransactWriteCommand({
          TransactItems: [item(), item()].map((Item) => ({ Put: { TableName: table, Item } })),
        }),
      );
    const rows: { k: number; txMs: number; putsMs: number; puts8Ms: number }[] = [];
    for (const k of SIZES) {
      const rounds = Math.max(8, Math.round(ROUNDS / Math.sqrt(k / 2 + 1)));
      let t = performance.now();
      for (let r = 0; r < rounds; r++)
        await doc.send(
          new TransactWriteCommand({
            TransactItems: Array.from({ length: k }, () => ({ Put: { TableName: table, Item: item() } })),
          }),
        );
      const txMs = (performance.now() - t) / rounds;
      t = performance.now();
      for (let r = 0; r < rounds; r++)
        for (let i = 0; i < k; i++) await doc.send(new PutCommand({ TableName: table, Item: item() }));
      const putsMs = (performance.now() - t) / rounds;
      t = performance.now();
      for (let r = 0; r < rounds; r++) {
        const items = Array.from({ length: k }, item);
        let next = 0;
        await Promise.all(
          Array.from({ length: Math.min(8, k) }, async () => {
            while (next < items.length)
              await doc.send(new PutCommand({ TableName: table, Item: items[next++] }));
          }),
        );
      }
      const puts8Ms = (performance.now() - t) / rounds;
      rows.push({ k, txMs, putsMs, puts8Ms });
      say(`  k=${k}: tx ${fmt(txMs, 2)} ms, ${k} puts ${fmt(putsMs, 2)} ms, at 8: ${fmt(puts8Ms, 2)} ms`);
    }
    const line = leastSquares(rows.map((r) => ({ k: r.k, ms: r.txMs })));
    say(`  fit: ${fmt(line.fixed, 2)} ms per transaction + ${fmt(line.perItem, 3)} ms per item`);

    // Concurrent transactions on one shared item.
    const shared = { pk: 'SHARED', sk: 'COUNTER' };
    await doc.send(new PutCommand({ TableName: table, Item: { ...shared, n: 0 } }));
    let conflicts = 0;
    let ok = 0;
    const tries = 4;
    for (let round = 0; round < tries; round++) {
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          try {
            await doc.send(
              new TransactWriteCommand({
                TransactItems: [
                  {
                    Update: {
                      TableName: table,
                      Key: shared,
                      UpdateExpression: 'ADD n :one',
                      ExpressionAttributeValues: { ':one': 1 },
                    },
                  },
                  { Put: { TableName: table, Item: item() } },
                ],
              }),
            );
            ok++;
          } catch (err) {
            const reasons = (err as TransactionCanceledException).CancellationReasons ?? [];
            if (reasons.some((r) => r.Code === 'TransactionConflict')) conflicts++;
            else throw err;
          }
        }),
      );
    }
    say(`  shared item: ${ok} committed, ${conflicts} cancelled (TransactionConflict) of ${32 * tries}`);

    const callbacks = await callbackWork(doc);
    say(
      `  ${callbacks.n} callbacks: reportTask ${fmt(callbacks.reportMs / 1000, 2)} s (${fmt(callbacks.calls / callbacks.n, 1)} DynamoDB calls each); ` +
        `2-item transactions ${fmt(callbacks.minimalMs / 1000, 2)} s`,
    );
    // The bound on a whole release's staged p50 (docs/benchmarks.md): 2.5 × (2 s of work + the floor of this very run).
    const bound = 2.5 * (2000 + callbacks.minimalMs);

    const table1 = [
      '| items per transaction | one TransactWriteItems (ms) | ms per item inside it | the same items as single PutItems, one after another (ms) | as single PutItems, 8 at a time (ms) |',
      '|---:|---:|---:|---:|---:|',
      ...rows.map(
        (r) =>
          `| ${r.k} | ${fmt(r.txMs, 2)} | ${fmt(r.txMs / r.k, 3)} | ${fmt(r.putsMs, 2)} | ${fmt(r.puts8Ms, 2)} |`,
      ),
    ].join('\n');
    const section = [
      '## DynamoDB Local transaction cost (`npm run bench:txcost`)',
      '',
      machineInfo(),
      '',
      `DynamoDB Local on disk (-Xmx256m), one DocumentClient, sequential calls after 200 warm-up transactions. Items: new`,
      'keys with gsi1 keys, about 300 bytes. Each row is the mean over its rounds.',
      '',
      table1,
      '',
      `Least-squares fit over the transaction column: **${fmt(line.fixed, 2)} ms per transaction + ${fmt(line.perItem, 3)} ms per item**.`,
      `So a transaction's cost is mostly per item once it holds more than about ${fmt(Math.max(1, line.fixed / Math.max(line.perItem, 0.001)))} items: merging`,
      'many small transactions into one saves the fixed part (round trip, signing, the emulator’s per-transaction work)',
      'for each transaction saved, and nothing per item. Single PutItems are cheaper per item than items in a transaction',
      'but give up atomicity, which every state change needs with its event.',
      '',
      `Concurrent transactions on one item: 32 at once, each ADDing to one shared item plus a Put of its own, ${tries} rounds:`,
      `${ok} committed and ${conflicts} were cancelled with \`TransactionConflict\` (no retry here).`,
      conflicts === 0
        ? 'DynamoDB Local applied them one after the other. DynamoDB does not: it cancels a transaction that meets another'
        : 'DynamoDB Local, like DynamoDB, cancels a transaction that meets another',
      'one in flight on the same item, so on AWS an item that every concurrent writer touches (a counter, or a',
      "release's task view in its callbacks) is sharded or retried with backoff (`transact`), and here it is a queue.",
      '',
      `The staging callbacks of the ${CALLBACK_RELEASES} × ${CALLBACK_SERVICES} run (bench:release), without HTTP: ${CALLBACK_RELEASES} releases of ${CALLBACK_SERVICES} tasks created through`,
      `the repository, then ${fmt(callbacks.n)} \`staged\` reports at once through the real use case (\`reportTask\`, real repositories,`,
      'one DocumentClient with 64 sockets) in this process:',
      '',
      '| what | DynamoDB calls per callback | time for all (s) | callbacks/s |',
      '|---|---:|---:|---:|',
      `| ${fmt(callbacks.n)} callbacks (\`reportTask\`: the task from its id index, then one transaction of the task, its view shard, its event, one counter item and the service item, ${fmt(callbacks.itemsPerTransaction, 1)} items, whose conditions check the task's state, the release's phase and the service's binding) | ${fmt(callbacks.calls / callbacks.n, 1)} | ${fmt(callbacks.reportMs / 1000, 2)} | ${fmt(callbacks.n / (callbacks.reportMs / 1000))} |`,
      `| ${fmt(callbacks.n)} of the smallest transaction a callback can be (its task and its event, 2 items), no reads | 1 | ${fmt(callbacks.minimalMs / 1000, 2)} | ${fmt(callbacks.n / (callbacks.minimalMs / 1000))} |`,
      '',
      `Where one callback's time goes: the ${callbacks.alone.n} callbacks of one more release, one at a time, ${fmt(callbacks.alone.ms / callbacks.alone.n, 1)} ms each:`,
      '',
      '| DynamoDB call | per callback | ms each | ms per callback |',
      '|---|---:|---:|---:|',
      ...[...callbacks.alone.byCall].map(
        ([name, b]) =>
          `| ${name} | ${fmt(b.n / callbacks.alone.n, 1)} | ${fmt(b.ms / b.n, 2)} | ${fmt(b.ms / callbacks.alone.n, 2)} |`,
      ),
      '',
      `What this says of the target for the ${CALLBACK_RELEASES} × ${CALLBACK_SERVICES} run, staged p50 <= 2.5 × (2 s of work + floor), the floor`,
      `being the second row: 2.5 × (2 + ${fmt(callbacks.minimalMs / 1000, 2)}) = ${fmt(bound / 1000, 2)} s for everything a release does before it is staged, and`,
      `these callbacks alone, with no HTTP, no release creation and no initialize or start round, took ${fmt(callbacks.reportMs / 1000, 2)} s, that is`,
      `${fmt(callbacks.reportMs / (2000 + callbacks.minimalMs), 2)} × (work + floor). Each callback is its own HTTP request (a Lambda invocation on AWS), so its state`,
      'change, its event and its counts are its own transaction, and DynamoDB Local charges that transaction per item (the',
      `fit above): ${fmt(callbacks.itemsPerTransaction, 1)} items against the floor's 2, each count riding on an item the callback writes anyway`,
      '([decision 0025](decisions/0025-counts-ride-on-the-items-a-change-writes.md)); bench:release measures the whole run.',
    ].join('\n');
    say('');
    say(section);
    if (WRITE_DOCS) writeSection(resolve(ROOT, 'docs/benchmarks.md'), 'bench:txcost', section);
  } finally {
    doc.destroy();
    await ddb.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The staging callbacks of the concurrent release run, in-process: the real use case and repositories against
 * releases created through the repository (tasks pending, which may report `staged`), all reports at once. Then the
 * floor: the same number of 2-item transactions (a task update and an event put), also all at once.
 */
async function callbackWork(doc: ReturnType<typeof benchDocumentClient>): Promise<{
  n: number;
  reportMs: number;
  /** Items in a callback's TransactWriteItems, on average over the concurrent burst. */
  itemsPerTransaction: number;
  calls: number;
  minimalMs: number;
  alone: { n: number; ms: number; byCall: Map<string, { n: number; ms: number }> };
}> {
  const tables = { coordinator: 'txcost-Coordinator', studies: 'txcost-Studies' };
  let calls = 0;
  let transactions = 0;
  let transactionItems = 0;
  // Time per kind of call, kept only while one callback runs at a time (concurrent timings would include queueing).
  let byCall: Map<string, { n: number; ms: number }> | null = null;
  const counted = {
    send: (async (cmd: Parameters<typeof doc.send>[0]) => {
      calls++;
      const written = (cmd.input as { TransactItems?: unknown[] }).TransactItems?.length;
      if (written) {
        transactions++;
        transactionItems += written;
      }
      const t0 = performance.now();
      try {
        return await doc.send(cmd);
      } finally {
        if (byCall) {
          const input = cmd.input as { IndexName?: string };
          const name = `${cmd.constructor.name.replace(/Command$/, '')}${input.IndexName ? ` (${input.IndexName})` : ''}`;
          const b = byCall.get(name) ?? { n: 0, ms: 0 };
          b.n++;
          b.ms += performance.now() - t0;
          byCall.set(name, b);
        }
      }
    }) as typeof doc.send,
  } as typeof doc;
  const docs = counted;
  const releases = new DynamoReleaseRepository(docs, tables);
  const services = new DynamoTaskServiceRepository(docs, tables);
  const svcs = [];
  for (let i = 0; i < CALLBACK_SERVICES; i++)
    svcs.push(
      await services.create(
        {
          name: `svc ${i}`,
          description: '',
          author: 'bench',
          url: 'http://127.0.0.1:9',
          enabled: true,
          healthStatus: 'ok',
          lastOkStatus: 0,
          clientId: null,
        },
        freshCredentials(),
      ),
    );
  const taskIds: string[] = [];
  // One more release than the concurrent run uses: its callbacks run one at a time first, to see where one goes.
  const aloneIds: string[] = [];
  for (let r = 0; r <= CALLBACK_RELEASES; r++) {
    const created = await releases.create(
      {
        name: `r${r}`,
        description: '',
        studies: [],
        version: `0.0.${r}`,
        tags: [],
        author: 'bench',
        isMajor: false,
      },
      svcs,
      await services.readGuard(),
      () => [],
    );
    (r === 0 ? aloneIds : taskIds).push(...created.tasks.map((t) => t.id));
  }
  const deps = {
    releases,
    taskServices: services,
    orchestrator: { start: async () => {}, wake: async () => {}, drive: async () => {} },
    publisher: { publish: async () => {} },
  };
  byCall = new Map();
  let t = performance.now();
  for (const id of aloneIds)
    await reportTask(deps, id, { state: 'staged', progress: 100 }, { isAdmin: false, identity: 'svc' });
  const alone = { n: aloneIds.length, ms: performance.now() - t, byCall };
  byCall = null;
  calls = 0;
  transactions = 0;
  transactionItems = 0;
  t = performance.now();
  await Promise.all(
    taskIds.map((id) =>
      reportTask(deps, id, { state: 'staged', progress: 100 }, { isAdmin: false, identity: 'svc' }),
    ),
  );
  const reportMs = performance.now() - t;
  const reportCalls = calls;
  const itemsPerTransaction = transactionItems / transactions;

  const minimalMs = await minimalTransactionBurst(doc, TX_TABLE, taskIds.length);
  return { n: taskIds.length, reportMs, calls: reportCalls, itemsPerTransaction, minimalMs, alone };
}

main().catch((err) => {
  process.stderr.write(`bench:txcost failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
