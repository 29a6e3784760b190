import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';

/**
 * @covers functions/adapters/dynamodb/releases/versions.ts
 */

const ddb = mockClient(DynamoDBDocumentClient);
const doc = DynamoDBDocumentClient.from(
  new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
);
afterEach(() => ddb.reset());

describe('the highest published version', () => {
  it('is read with a strongly consistent read of the base table, not from an index', async () => {
    ddb.on(GetCommand).resolves({ Item: { pk: 'VERSION', sk: 'HIGHEST', version: '2.3.0' } });
    ddb.on(QueryCommand).resolves({ Items: [{ version: '1.0.0' }] });
    const repo = new DynamoReleaseRepository(doc, { coordinator: 'c', studies: 's' });
    expect(await repo.highestPublishedVersion()).toBe('2.3.0');
    const reads = [...ddb.commandCalls(GetCommand), ...ddb.commandCalls(QueryCommand)];
    expect(reads.length).toBeGreaterThan(0);
    for (const call of reads) {
      const input = call.args[0].input as { ConsistentRead?: boolean; IndexName?: string };
      expect(input.IndexName).toBeUndefined();
      expect(input.ConsistentRead).toBe(true);
    }
  });
});
