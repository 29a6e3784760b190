import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { dynamoDbStore } from '#packages/task-service/src/dynamodb-store.js';
import { aTask } from '#test/unit/task-service/tasks.js';

/** The DynamoDB store's requests: conditional writes, so two instances never both move a task. */
const ddb = mockClient(DynamoDBDocumentClient);
const client = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
const conditionFailed = () =>
  new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
const store = () => dynamoDbStore({ table: 'tasks', client, now: () => 5_000 });

describe('dynamoDbStore', () => {
  beforeEach(() => ddb.reset());

  it('reads a task strongly consistent, without its key', async () => {
    ddb.on(GetCommand).resolves({ Item: { pk: 'task#TA_1', ...aTask() } });
    expect(await store().get('TA_1')).toEqual(aTask());
    expect(ddb.commandCalls(GetCommand)[0].args[0].input).toEqual({
      TableName: 'tasks',
      Key: { pk: 'task#TA_1' },
      ConsistentRead: true,
    });
  });

  it('creates a task only if absent, and answers the existing one otherwise', async () => {
    ddb.on(PutCommand).rejects(conditionFailed());
    ddb.on(GetCommand).resolves({ Item: { pk: 'task#TA_1', ...aTask({ state: 'running' }) } });
    expect(await store().create(aTask())).toEqual(aTask({ state: 'running' }));
    expect(ddb.commandCalls(PutCommand)[0].args[0].input).toMatchObject({
      Item: { pk: 'task#TA_1', task_id: 'TA_1', state: 'pending' },
      ConditionExpression: 'attribute_not_exists(pk)',
    });
  });

  it('changes a task on the condition of its state, and answers undefined when the condition fails', async () => {
    ddb.on(UpdateCommand).resolvesOnce({ Attributes: { pk: 'task#TA_1', ...aTask({ state: 'canceled' }) } });
    expect(await store().update('TA_1', { state: 'canceled' }, ['pending', 'running'])).toEqual(
      aTask({ state: 'canceled' }),
    );
    expect(ddb.commandCalls(UpdateCommand)[0].args[0].input).toMatchObject({
      Key: { pk: 'task#TA_1' },
      UpdateExpression: 'SET #state = :state',
      ConditionExpression: 'attribute_exists(pk) AND #state IN (:from0, :from1)',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':state': 'canceled', ':from0': 'pending', ':from1': 'running' },
    });
    ddb.on(UpdateCommand).rejects(conditionFailed());
    expect(await store().update('TA_1', { progress: 5 }, ['running'])).toBeUndefined();
  });

  it('claims a message id with a TTL, once', async () => {
    ddb.on(PutCommand).resolvesOnce({}).rejectsOnce(conditionFailed());
    expect(await store().claimMessage('msg_1', 605_000)).toBe(true);
    expect(await store().claimMessage('msg_1', 605_000)).toBe(false);
    expect(ddb.commandCalls(PutCommand)[0].args[0].input).toEqual({
      TableName: 'tasks',
      Item: { pk: 'message#msg_1', expires_at: 605 },
      ConditionExpression: 'attribute_not_exists(pk) OR expires_at < :now',
      ExpressionAttributeValues: { ':now': 5 },
    });
  });

  it('lets any other error through', async () => {
    ddb.on(PutCommand).rejects(new Error('throttled'));
    await expect(store().claimMessage('msg_1', 1)).rejects.toThrow('throttled');
  });
});
