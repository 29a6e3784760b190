import { DynamoDBClient, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { transact } from '#functions/adapters/dynamodb/common.js';
import { isTransient } from '#functions/orchestration/changes.js';

const ddb = mockClient(DynamoDBDocumentClient);
const doc = DynamoDBDocumentClient.from(
  new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
);
afterEach(() => ddb.reset());

const throttled = () =>
  new TransactionCanceledException({
    message:
      'Transaction cancelled, please refer cancellation reasons for specific reasons [None, ThrottlingError]',
    $metadata: { httpStatusCode: 400 },
    CancellationReasons: [
      { Code: 'None' },
      { Code: 'ThrottlingError', Message: 'Throughput exceeds the limit' },
    ],
  });
const item = { kind: 'x', id: '1', item: { Put: { TableName: 't', Item: { pk: 'a', sk: 'b' } } } };

describe('transactions cancelled for throttling', () => {
  it('are retried until they go through', async () => {
    ddb.on(TransactWriteCommand).rejectsOnce(throttled()).rejectsOnce(throttled()).resolves({});
    expect(await transact(doc, [item, item])).toEqual({ ok: true });
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(3);
  });

  it('surface as a transient error when the throttling outlasts the retries, never as a failed release', async () => {
    ddb.on(TransactWriteCommand).rejects(throttled());
    const err = await transact(doc, [item, item], 3).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(isTransient(err)).toBe(true);
  });
});
