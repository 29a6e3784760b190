import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { counterKey, serviceGroupShards, shardOf, VIEW_SHARDS } from '#functions/adapters/dynamodb/common.js';
import {
  eventFolds,
  foldItems,
  releaseEventCount,
  serviceEventCount,
  taskEventCounts,
} from '#functions/adapters/dynamodb/event-counts.js';
import type { CoordinatorEvent } from '#functions/coordinator/model.js';

const ddb = mockClient(DynamoDBDocumentClient);
const doc = DynamoDBDocumentClient.from(
  new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
);
afterEach(() => ddb.reset());

const event = (e: Partial<CoordinatorEvent>): CoordinatorEvent => ({
  id: 'EV_1',
  eventType: 'info',
  message: 'm',
  releaseId: null,
  taskId: null,
  taskServiceId: null,
  studyId: null,
  source: 'coordinator',
  createdAt: '2026-01-01T00:00:00.000000Z',
  ...e,
});

describe('the counts an event moves on other items', () => {
  it("count a task's event on its task and on the release's view shard of the task's group", () => {
    expect(eventFolds(event({ releaseId: 'RE_1', taskId: 'TA_1' }))).toEqual({
      release: { releaseId: 'RE_1', group: shardOf('TA_1', VIEW_SHARDS) },
      task: { releaseId: 'RE_1', taskId: 'TA_1', attr: 'evn' },
    });
  });

  it('count an event naming a task but no release on the task, found under its own release', () => {
    expect(eventFolds(event({ taskId: 'TA_1' }), 'RE_9')).toEqual({
      task: { releaseId: 'RE_9', taskId: 'TA_1', attr: 'evo' },
    });
  });

  it("count a release's own event on a shard its writer picks, and an event naming neither nowhere", () => {
    expect(eventFolds(event({ releaseId: 'RE_1' }))).toEqual({ release: { releaseId: 'RE_1' } });
    expect(eventFolds(event({ taskServiceId: 'TS_1' }))).toEqual({});
  });

  it('are moved by updates that never create a task item', () => {
    const items = foldItems('t', eventFolds(event({ releaseId: 'RE_1', taskId: 'TA_1' })), -1, 3);
    expect(items.map((i) => i.item.Update)).toEqual([
      expect.objectContaining({
        Key: { pk: 'RE#RE_1', sk: 'TA#TA_1' },
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':d': -1 },
      }),
      expect.objectContaining({
        Key: { pk: 'RE#RE_1', sk: `RE#V#${shardOf('TA_1', VIEW_SHARDS)}` },
        ExpressionAttributeNames: { '#n': 'ev' },
      }),
    ]);
    expect(foldItems('t', { release: { releaseId: 'RE_1' } }, 1, 3)[0].item.Update?.Key?.sk).toBe('RE#V#3');
  });
});

describe('the event counts read back', () => {
  it("sum a release's view shards", async () => {
    ddb.on(BatchGetCommand).resolves({
      Responses: { t: [{ pk: 'RE#RE_1', sk: 'RE#V#0', ev: 4 }, { pk: 'RE#RE_1', sk: 'RE#V#5', ev: 2 }, {}] },
    });
    expect(await releaseEventCount(doc, 't', 'RE_1')).toBe(6);
    const keys = ddb.commandCalls(BatchGetCommand)[0].args[0].input.RequestItems?.t?.Keys;
    expect(keys).toHaveLength(VIEW_SHARDS);
  });

  it("add what a service's callbacks counted on its group's shards of the callbacks' item to its counter items", async () => {
    const [first, , third] = serviceGroupShards('TS_1');
    ddb.on(BatchGetCommand).resolves({
      Responses: {
        t: [
          { ...counterKey('EV#TS#TS_1', 2), n: 5 },
          { ...counterKey('TAEV', first), ev: 40, 'ts:TS_1': 4, 'ts:TS_9': 30 },
          { ...counterKey('TAEV', third), 'ts:TS_1': 3 },
        ],
      },
    });
    expect(await serviceEventCount(doc, 't', 'TS_1')).toBe(12);
    // Its counter's 8 shards and its group's 8, in one request.
    const keys = ddb.commandCalls(BatchGetCommand)[0].args[0].input.RequestItems?.t?.Keys ?? [];
    expect(keys).toHaveLength(16);
    expect(keys).toContainEqual(counterKey('TAEV', first));
  });

  it('read a task item as it is, with no count yet as zero', () => {
    expect(taskEventCounts({ evn: 3, evo: 1 })).toEqual({ events: 3, only: 1 });
    expect(taskEventCounts(undefined)).toEqual({ events: 0, only: 0 });
  });
});
