import { Readable } from 'node:stream';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { HttpResponse } from '@smithy/core/protocols';
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { describe, expect, it } from 'vitest';
import { retrySingleWriteConflicts } from '#functions/adapters/dynamodb/conflict-retry.js';

/**
 * A single write that met a transaction is sent again by the SDK's own retry strategy; a cancelled transaction is
 * not (its use case decides). The DynamoDB answers are canned HTTP responses, in order; no network, no backoff.
 */
const JSON_10 = { 'content-type': 'application/x-amz-json-1.0' };
const conflict = {
  status: 400,
  body: { __type: 'com.amazonaws.dynamodb.v20120810#TransactionConflictException', message: 'conflict' },
};
const cancelled = {
  status: 400,
  body: {
    __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
    message:
      'Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]',
    CancellationReasons: [{ Code: 'TransactionConflict', Message: 'conflict' }],
  },
};
const ok = { status: 200, body: {} };

function client(...answers: { status: number; body: unknown }[]) {
  const sent: string[] = [];
  const raw = new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    retryStrategy: new ConfiguredRetryStrategy(4, () => 0),
    requestHandler: {
      handle: async (req: { headers: Record<string, string> }) => {
        sent.push(req.headers['x-amz-target'] ?? '');
        const a = answers.length > 1 ? (answers.shift() ?? ok) : (answers[0] ?? ok);
        return {
          response: new HttpResponse({
            statusCode: a.status,
            headers: JSON_10,
            body: Readable.from([Buffer.from(JSON.stringify(a.body))]),
          }),
        };
      },
    },
  });
  return { doc: DynamoDBDocumentClient.from(retrySingleWriteConflicts(raw)), sent, raw };
}

describe('retrySingleWriteConflicts', () => {
  it('sends a PutItem that met a transaction again, until it is written', async () => {
    const { doc, sent, raw } = client(conflict, conflict, ok);
    await doc.send(new PutCommand({ TableName: 't', Item: { pk: 'a', sk: 'b' } }));
    expect(sent).toEqual(Array(3).fill('DynamoDB_20120810.PutItem'));
    raw.destroy();
  });

  it('gives up after the strategy’s attempts with the conflict itself', async () => {
    const { doc, sent, raw } = client(conflict);
    const err = await doc
      .send(new PutCommand({ TableName: 't', Item: { pk: 'a', sk: 'b' } }))
      .catch((e) => e);
    expect(err.name).toBe('TransactionConflictException');
    expect(sent).toHaveLength(4);
    raw.destroy();
  });

  it('leaves a cancelled transaction to its caller: one attempt', async () => {
    const { doc, sent, raw } = client(cancelled, ok);
    const err = await doc
      .send(
        new TransactWriteCommand({
          TransactItems: [{ Put: { TableName: 't', Item: { pk: 'a', sk: 'b' } } }],
        }),
      )
      .catch((e) => e);
    expect(err.name).toBe('TransactionCanceledException');
    expect(sent).toEqual(['DynamoDB_20120810.TransactWriteItems']);
    raw.destroy();
  });
});
