import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoTaskServiceRepository } from '#functions/adapters/dynamodb/task-services.js';
import { freshCredentials } from '#functions/coordinator/service-credentials.js';
import { useLocalTables } from '#test/helpers/tables.js';

let repo: DynamoTaskServiceRepository;

beforeAll(async () => {
  await useLocalTables();
  const doc = DynamoDBDocumentClient.from(new DynamoDBClient({}));
  repo = new DynamoTaskServiceRepository(doc, tablesFromEnv());
});

const newService = () =>
  repo.create(
    {
      name: 'svc',
      description: '',
      author: 'a',
      url: 'http://127.0.0.1:9',
      enabled: true,
      healthStatus: 'ok',
      lastOkStatus: 0,
      clientId: null,
    },
    freshCredentials(),
  );

describe('failed health checks on DynamoDB Local', () => {
  it('are counted atomically under overlapping runs and mark the service down at the threshold', async () => {
    const s = await newService();
    const results = await Promise.all(Array.from({ length: 10 }, () => repo.recordFailedCheck(s.id, 3)));
    // Every overlapping failure was counted: none overwrote another's increment.
    expect(results.every((r) => r !== null && r.lastOkStatus >= 1)).toBe(true);
    const stored = await repo.get(s.id);
    expect(stored).toMatchObject({ lastOkStatus: 10, healthStatus: 'down' });
  });

  it('stay ok below the threshold and answer null for a service that does not exist', async () => {
    const s = await newService();
    expect(await repo.recordFailedCheck(s.id, 3)).toMatchObject({ lastOkStatus: 1, healthStatus: 'ok' });
    expect(await repo.recordFailedCheck(s.id, 3)).toMatchObject({ lastOkStatus: 2, healthStatus: 'ok' });
    expect(await repo.recordFailedCheck(s.id, 3)).toMatchObject({ lastOkStatus: 3, healthStatus: 'down' });
    expect(await repo.recordFailedCheck('TS_00000000', 3)).toBeNull();
  });
});
