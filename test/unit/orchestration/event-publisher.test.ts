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
} from '../../../functions/adapters/event-publisher.js';
import type { CoordinatorEvent } from '../../../functions/coordinator/model.js';

const snsMock = mockClient(SNSClient);
const ebMock = mockClient(EventBridgeClient);

const event = (i: number): CoordinatorEvent => ({
  id: `EV_${String(i).padStart(8, '0')}`,
  eventType: i === 0 ? 'error' : 'info',
  message: `event ${i}`,
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

  it('publishes to SNS in batches of 10 with the event JSON and an event_type attribute', async () => {
    snsMock.on(PublishBatchCommand).resolves({ Successful: [], Failed: [] });
    const p = new SnsEventPublisher(
      new SNSClient({ region: 'us-east-1' }),
      'arn:aws:sns:us-east-1:1:t',
      'https://api',
    );
    await p.publish(Array.from({ length: 12 }, (_, i) => event(i)));
    const calls = snsMock.commandCalls(PublishBatchCommand);
    expect(calls.map((c) => c.args[0].input.PublishBatchRequestEntries?.length)).toEqual([10, 2]);
    const first = calls[0].args[0].input.PublishBatchRequestEntries?.[0];
    expect(JSON.parse(first?.Message ?? '')).toMatchObject({
      item_id: 'EV_00000000',
      event_type: 'error',
      release: 'https://api/releases/RE_00000001',
      release_id: 'RE_00000001',
    });
    expect(first?.MessageAttributes?.event_type.StringValue).toBe('error');
  });

  it('publishes to an EventBridge bus', async () => {
    ebMock.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [] });
    const p = new EventBridgePublisher(new EventBridgeClient({ region: 'us-east-1' }), 'bus', '');
    await p.publish([event(1)]);
    const entry = ebMock.commandCalls(PutEventsCommand)[0].args[0].input.Entries?.[0];
    expect(entry).toMatchObject({
      EventBusName: 'bus',
      Source: 'release-coordinator',
      DetailType: 'Coordinator Event',
    });
    expect(JSON.parse(entry?.Detail ?? '').message).toBe('event 1');
  });

  it('never lets a publishing failure reach the state change that is already stored', async () => {
    snsMock.on(PublishBatchCommand).rejects(new Error('throttled'));
    const p = bestEffort(new SnsEventPublisher(new SNSClient({ region: 'us-east-1' }), 'arn:aws:sns:x', ''));
    await expect(p.publish([event(1)])).resolves.toBeUndefined();
  });

  it('chooses SNS, EventBridge or nothing from the env', async () => {
    snsMock.on(PublishBatchCommand).resolves({});
    ebMock.on(PutEventsCommand).resolves({ FailedEntryCount: 0 });
    await eventPublisherFromEnv({ EVENTS_TOPIC_ARN: 'arn:aws:sns:us-east-1:1:t' }).publish([event(1)]);
    expect(snsMock.commandCalls(PublishBatchCommand)).toHaveLength(1);
    await eventPublisherFromEnv({ EVENTS_BUS_NAME: 'bus' }).publish([event(1)]);
    expect(ebMock.commandCalls(PutEventsCommand)).toHaveLength(1);
    expect(eventPublisherFromEnv({})).toBe(noEventPublisher);
  });
});
