import { randomBytes } from 'node:crypto';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '#local/dynamodb-local.js';
import { dynamoDbStore } from '#packages/task-service/src/dynamodb-store.js';
import type { StoredTask } from '#packages/task-service/src/store.js';

/**
 * The kit's DynamoDB store on DynamoDB Local: the table a service would create (string key `pk`), tasks created once,
 * changes conditioned on the state (two instances racing: one wins), webhook-ids claimed once.
 */
const client = localClient(inject('ddbEndpoint'));
const docs = DynamoDBDocumentClient.from(client);
const table = `kit-${randomBytes(4).toString('hex')}`;
const task: StoredTask = {
  task_id: 'TA_1',
  release_id: 'RE_1',
  studies: ['SD_1'],
  state: 'pending',
  progress: 0,
  date_submitted: '2026-11-26T00:00:00.000Z',
};

beforeAll(async () => {
  await client.send(
    new CreateTableCommand({
      TableName: table,
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
});
afterAll(() => client.destroy());

describe('dynamoDbStore on DynamoDB Local', () => {
  it('creates a task once, reads it back, and changes it only from the states given', async () => {
    const store = dynamoDbStore({ table, client: docs });
    expect(await store.create(task)).toEqual(task);
    expect(await store.create({ ...task, release_id: 'RE_2' })).toEqual(task);
    expect(await store.get('TA_1')).toEqual(task);
    expect(await store.get('TA_NONE')).toBeUndefined();
    expect(
      await store.update('TA_1', { state: 'running', progress: 0, request_id: 'r1' }, ['pending']),
    ).toEqual({
      ...task,
      state: 'running',
      request_id: 'r1',
    });
    expect(await store.update('TA_1', { progress: 40 }, ['running'])).toMatchObject({ progress: 40 });
    expect(await store.update('TA_NONE', { progress: 1 })).toBeUndefined();
  });

  it('lets one of two racing instances move a task: the cancel or the end of the work, never both', async () => {
    const a = dynamoDbStore({ table, client: docs });
    const b = dynamoDbStore({ table, client: docs });
    await a.create({ ...task, task_id: 'TA_RACE', state: 'running' });
    const [end, cancel] = await Promise.all([
      a.update('TA_RACE', { state: 'staged', progress: 100 }, ['running']),
      b.update('TA_RACE', { state: 'canceled' }, ['running']),
    ]);
    expect([end, cancel].filter(Boolean)).toHaveLength(1);
    expect(['staged', 'canceled']).toContain((await a.get('TA_RACE'))?.state);
  });

  it('claims a webhook-id once, across instances, and again once its record has expired', async () => {
    let now = 1_000_000;
    const a = dynamoDbStore({ table, client: docs, now: () => now });
    const b = dynamoDbStore({ table, client: docs, now: () => now });
    expect(await a.claimMessage('msg_1', now + 600_000)).toBe(true);
    expect(await b.claimMessage('msg_1', now + 600_000)).toBe(false);
    now += 601_000;
    expect(await b.claimMessage('msg_1', now + 600_000)).toBe(true);
  });

  it('lists the tasks in the states asked for (not the replay records), and keeps a checkpoint and its clearing', async () => {
    const store = dynamoDbStore({ table, client: docs });
    await store.create({ ...task, task_id: 'TA_LIST_R', state: 'running' });
    await store.create({ ...task, task_id: 'TA_LIST_S', state: 'staged' });
    await store.claimMessage('msg_list', Date.now() + 60_000);
    expect(
      await store.update('TA_LIST_R', { checkpoint: { done: ['SD_1'] }, attempt: 2 }, ['running']),
    ).toMatchObject({ checkpoint: { done: ['SD_1'] }, attempt: 2 });
    const listed = await store.list?.(['running', 'staged']);
    const ids = (listed ?? []).map((t) => t.task_id);
    expect(ids).toEqual(expect.arrayContaining(['TA_LIST_R', 'TA_LIST_S']));
    expect((listed ?? []).every((t) => ['running', 'staged'].includes(t.state))).toBe(true);
    expect(await store.list?.([])).toEqual([]);
    expect(await store.update('TA_LIST_R', { state: 'staged', checkpoint: null }, ['running'])).toMatchObject(
      {
        checkpoint: null,
      },
    );
  });
});
