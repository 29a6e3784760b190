import { type DynamoDBDocumentClient, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { createTables, localClient, tableEnv } from '#local/dynamodb-local.js';

/**
 * The floor of a burst of task callbacks on a DynamoDB Local: `n` of the smallest transaction a callback could be
 * (its task moved from running to staged, conditioned on running, and its event put: 2 items, no reads, no counts),
 * all sent at once. A callback is its own request and its state change goes with its event, so no burst of `n`
 * callbacks can finish faster on that emulator. bench:txcost measures it on its own DynamoDB Local; bench:release
 * measures it on the stack's, in the same run as the releases, for the same-run ratio.
 */
export async function minimalTransactionBurst(
  doc: DynamoDBDocumentClient,
  table: string,
  n: number,
): Promise<number> {
  const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const key = (i: number, kind: string) => ({ pk: `FLOOR#${run}#${kind}#${i}`, sk: kind });
  for (let i = 0; i < n; i += 25)
    await Promise.all(
      Array.from({ length: Math.min(25, n - i) }, (_, j) =>
        doc.send(new PutCommand({ TableName: table, Item: { ...key(i + j, 'TA'), state: 'running' } })),
      ),
    );
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: n }, (_, i) =>
      doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: table,
                Key: key(i, 'TA'),
                UpdateExpression: 'SET #s = :to',
                ConditionExpression: '#s = :from',
                ExpressionAttributeNames: { '#s': 'state' },
                ExpressionAttributeValues: { ':to': 'staged', ':from': 'running' },
              },
            },
            {
              Put: {
                TableName: table,
                Item: {
                  ...key(i, 'EV'),
                  gsi1pk: `EV#${String(i % 4).padStart(2, '0')}`,
                  gsi1sk: `${new Date().toISOString()}#${i}`,
                  message: `task ${i} changed from running to staged`,
                },
              },
            },
          ],
        }),
      ),
    ),
  );
  return performance.now() - t0;
}

/** A table of its own on that DynamoDB Local for the floor (the project's layout, under the prefix `floor`). */
export async function floorTable(endpoint: string): Promise<string> {
  const admin = localClient(endpoint);
  try {
    // No stream: nothing reads it, and beside the stack's own stream DynamoDB Local would slow every write to it
    // (createTables says why); on a fresh instance a table with a stream measured the same floor as one without.
    await createTables(admin, 'floor', { streams: false });
  } finally {
    admin.destroy();
  }
  return tableEnv('floor').COORDINATOR_TABLE;
}
