import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { PublishBatchCommand, SNSClient } from '@aws-sdk/client-sns';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  bestEffort,
  EventBridgePublisher,
  eventPublisherFromEnv,
  noEventPublisher,
  SnsEventPublisher,
} from '#functions/adapters/event-publisher.js';
import type { CoordinatorEvent } from '#functions/coordinator/model.js';

/** The event publisher on @aws-sdk/client-sns and @aws-sdk/client-eventbridge, their answers from aws-sdk-client-mock. */
const snsMock = mockClient(SNSClient);
const ebMock = mockClient(EventBridgeClient);
const TOPIC = 'arn:aws:sns:eu-west-1:123456789012:coordinator-events';

const event = (i: number): CoordinatorEvent => ({
  id: `EV_${String(i).padStart(8, '0')}`,
  eventType: i === 0 ? 'error' : 'info',
  message: `event ${i} with spaces, "quotes" & <tags> + ünïcode`,
  source: 'coordinator',
  releaseId: 'RE_00000001',
  taskId: null,
  taskServiceId: null,
  studyId: null,
  createdAt: '2026-01-01T00:00:00.000000Z',
});

describe('event publishing', () => {
  beforeEach(() => {
    snsMock.reset();
    ebMock.reset();
  });

  it('publishes to SNS in batches of 10: the event JSON, its type and its source as attributes', async () => {
    snsMock.on(PublishBatchCommand).resolves({ Successful: [], Failed: [] });
    const p = new SnsEventPublisher(new SNSClient({ region: 'eu-west-1' }), TOPIC, 'https://api');
    await p.publish(Array.from({ length: 12 }, (_, i) => event(i)));
    const calls = snsMock.commandCalls(PublishBatchCommand);
    expect(calls.map((c) => c.args[0].input.TopicArn)).toEqual([TOPIC, TOPIC]);
    expect(calls.map((c) => c.args[0].input.PublishBatchRequestEntries?.map((e) => e.Id))).toEqual([
      ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'],
      ['0', '1'],
    ]);
    const first = calls[0].args[0].input.PublishBatchRequestEntries?.[0];
    expect(JSON.parse(first?.Message ?? '')).toMatchObject({
      item_id: 'EV_00000000',
      event_type: 'error',
      message: event(0).message,
      release: 'https://api/releases/RE_00000001',
      release_id: 'RE_00000001',
    });
    expect(first?.MessageAttributes).toEqual({
      event_type: { DataType: 'String', StringValue: 'error' },
      source: { DataType: 'String', StringValue: 'coordinator' },
    });
  });

  it('SNS: entries it refuses are an error (which bestEffort logs)', async () => {
    snsMock.on(PublishBatchCommand).resolves({
      Successful: [],
      Failed: [{ Id: '0', Code: 'InvalidParameter', Message: 'bad & wrong', SenderFault: true }],
    });
    const p = new SnsEventPublisher(new SNSClient({ region: 'eu-west-1' }), TOPIC, '');
    await expect(p.publish([event(1)])).rejects.toThrow('SNS refused 1 event(s): bad & wrong');
  });

  it('publishes to an EventBridge bus in batches of 10', async () => {
    ebMock.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [] });
    const p = new EventBridgePublisher(new EventBridgeClient({ region: 'us-west-2' }), 'bus', '');
    await p.publish(Array.from({ length: 11 }, (_, i) => event(i)));
    const calls = ebMock.commandCalls(PutEventsCommand);
    expect(calls.map((c) => c.args[0].input.Entries?.length)).toEqual([10, 1]);
    const entry = calls[0].args[0].input.Entries?.[1];
    expect(entry).toMatchObject({
      EventBusName: 'bus',
      Source: 'release-coordinator',
      DetailType: 'Coordinator Event',
    });
    expect(JSON.parse(entry?.Detail ?? '')).toMatchObject({
      item_id: 'EV_00000001',
      release_id: 'RE_00000001',
    });
  });

  it('EventBridge: failed entries are an error', async () => {
    ebMock.on(PutEventsCommand).resolves({
      FailedEntryCount: 1,
      Entries: [{ EventId: '1' }, { ErrorCode: 'X', ErrorMessage: 'no such bus' }],
    });
    const p = new EventBridgePublisher(new EventBridgeClient({ region: 'us-west-2' }), 'bus', '');
    await expect(p.publish([event(1), event(2)])).rejects.toThrow(
      'EventBridge refused 1 event(s): no such bus',
    );
  });

  it('never lets a publishing failure reach the state change that is already stored', async () => {
    snsMock.on(PublishBatchCommand).rejects(Object.assign(new Error('throttled'), { name: 'Throttling' }));
    const p = bestEffort(new SnsEventPublisher(new SNSClient({ region: 'eu-west-1' }), TOPIC, ''));
    await expect(p.publish([event(1)])).resolves.toBeUndefined();
    expect(snsMock.commandCalls(PublishBatchCommand)).toHaveLength(1);
  });

  it('chooses SNS, EventBridge or nothing from the env', async () => {
    snsMock.on(PublishBatchCommand).resolves({});
    ebMock.on(PutEventsCommand).resolves({ FailedEntryCount: 0 });
    await eventPublisherFromEnv({ EVENTS_TOPIC_ARN: TOPIC }).publish([event(1)]);
    expect(snsMock.commandCalls(PublishBatchCommand)).toHaveLength(1);
    await eventPublisherFromEnv({ EVENTS_BUS_NAME: 'bus' }).publish([event(1)]);
    expect(ebMock.commandCalls(PutEventsCommand)).toHaveLength(1);
    expect(eventPublisherFromEnv({})).toBe(noEventPublisher);
  });
});
