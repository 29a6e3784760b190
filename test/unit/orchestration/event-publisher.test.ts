import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { PublishBatchCommand, SNSClient } from '@aws-sdk/client-sns';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AwsHttp, EVENTBRIDGE_SERVICE, SNS_SERVICE } from '../../../functions/adapters/aws-http.js';
import {
  bestEffort,
  EventBridgePublisher,
  eventMessage,
  eventPublisherFromEnv,
  noEventPublisher,
  SnsEventPublisher,
} from '../../../functions/adapters/event-publisher.js';
import type { CoordinatorEvent } from '../../../functions/coordinator/model.js';
import { RecordingHandler, sent, withoutSdkTelemetry } from '../../helpers/recording-handler.js';

/**
 * The publisher's signed requests against what @aws-sdk/client-sns and @aws-sdk/client-eventbridge send for the same
 * batch, with the same credentials, region, endpoint and clock: method, URL, every header (Authorization included)
 * and body must be equal (the SDK's own telemetry headers are taken off before signing; nothing else is).
 */
const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', sessionToken: 'token+/=' };
const NOW = new Date('2025-01-02T03:04:05Z');
const TOPIC = 'arn:aws:sns:eu-west-1:123456789012:coordinator-events';
const SNS_OK =
  '<PublishBatchResponse><PublishBatchResult><Successful/><Failed/></PublishBatchResult></PublishBatchResponse>';

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

const http = (
  service: typeof SNS_SERVICE,
  handler: RecordingHandler,
  setup: { region: string; endpoint?: string },
) => new AwsHttp(service, { ...setup, credentials, requestHandler: handler });

describe('event publishing, on signed requests equal to the SDK clients’', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: NOW, toFake: ['Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it.each([
    ['AWS', { region: 'eu-west-1' }],
    ['a local endpoint', { region: 'us-east-1', endpoint: 'http://127.0.0.1:4566' }],
  ])('SNS PublishBatch (%s): batches of 10, the event JSON and its attributes', async (_, setup) => {
    const sdkHandler = new RecordingHandler().answer({ body: SNS_OK });
    const ourHandler = new RecordingHandler().answer({ body: SNS_OK });
    const client = new SNSClient({ ...setup, credentials, requestHandler: sdkHandler });
    withoutSdkTelemetry(client.middlewareStack);
    const events = Array.from({ length: 12 }, (_, i) => event(i));
    for (const batch of [events.slice(0, 10), events.slice(10)])
      await client.send(
        new PublishBatchCommand({
          TopicArn: TOPIC,
          PublishBatchRequestEntries: batch.map((e, i) => ({
            Id: String(i),
            Message: JSON.stringify(eventMessage(e, 'https://api')),
            MessageAttributes: {
              event_type: { DataType: 'String', StringValue: e.eventType },
              source: { DataType: 'String', StringValue: e.source },
            },
          })),
        }),
      );
    await new SnsEventPublisher(http(SNS_SERVICE, ourHandler, setup), TOPIC, 'https://api').publish(events);

    expect(ourHandler.requests).toHaveLength(2);
    for (const i of [0, 1]) expect(sent(ourHandler.requests[i])).toEqual(sent(sdkHandler.requests[i]));
    const first = new URLSearchParams(String(ourHandler.requests[0].body));
    expect(JSON.parse(first.get('PublishBatchRequestEntries.member.1.Message') ?? '')).toMatchObject({
      item_id: 'EV_00000000',
      event_type: 'error',
      release: 'https://api/releases/RE_00000001',
      release_id: 'RE_00000001',
    });
  });

  it('SNS: one event, the request byte for byte, signature included', async () => {
    const sdkHandler = new RecordingHandler().answer({ body: SNS_OK });
    const ourHandler = new RecordingHandler().answer({ body: SNS_OK });
    const client = new SNSClient({ region: 'eu-west-1', credentials, requestHandler: sdkHandler });
    withoutSdkTelemetry(client.middlewareStack);
    const plain: CoordinatorEvent = { ...event(1), message: 'plain' };
    await client.send(
      new PublishBatchCommand({
        TopicArn: TOPIC,
        PublishBatchRequestEntries: [
          {
            Id: '0',
            Message: JSON.stringify(eventMessage(plain, '')),
            MessageAttributes: {
              event_type: { DataType: 'String', StringValue: plain.eventType },
              source: { DataType: 'String', StringValue: plain.source },
            },
          },
        ],
      }),
    );
    await new SnsEventPublisher(http(SNS_SERVICE, ourHandler, { region: 'eu-west-1' }), TOPIC, '').publish([
      plain,
    ]);
    const [sdk, ours] = [sdkHandler.last(), ourHandler.last()];
    expect(ours).toEqual(sdk);
  });

  it('SNS: entries it refuses are an error (which bestEffort logs)', async () => {
    const handler = new RecordingHandler().answer({
      body: '<PublishBatchResponse><PublishBatchResult><Successful/><Failed><member><Id>0</Id><Code>InvalidParameter</Code><Message>bad &amp; wrong</Message><SenderFault>true</SenderFault></member></Failed></PublishBatchResult></PublishBatchResponse>',
    });
    const p = new SnsEventPublisher(http(SNS_SERVICE, handler, { region: 'eu-west-1' }), TOPIC, '');
    await expect(p.publish([event(1)])).rejects.toThrow('SNS refused 1 event(s): bad & wrong');
  });

  it('SNS: an error answer carries its code, as the SDK names it', async () => {
    const handler = new RecordingHandler().answer({
      status: 403,
      body: '<ErrorResponse><Error><Type>Sender</Type><Code>AuthorizationError</Code><Message>not allowed</Message></Error><RequestId>r</RequestId></ErrorResponse>',
    });
    const p = new SnsEventPublisher(http(SNS_SERVICE, handler, { region: 'eu-west-1' }), TOPIC, '');
    await expect(p.publish([event(1)])).rejects.toMatchObject({
      name: 'AuthorizationError',
      message: 'not allowed',
    });
  });

  it.each([
    ['AWS', { region: 'us-west-2' }],
    ['a local endpoint', { region: 'us-east-1', endpoint: 'http://127.0.0.1:4566' }],
  ])(
    'EventBridge PutEvents (%s) is the SDK’s request byte for byte, signature included',
    async (_, setup) => {
      const ok = { body: '{"FailedEntryCount":0,"Entries":[{"EventId":"1"}]}' };
      const sdkHandler = new RecordingHandler().answer(ok);
      const ourHandler = new RecordingHandler().answer(ok);
      const client = new EventBridgeClient({ ...setup, credentials, requestHandler: sdkHandler });
      withoutSdkTelemetry(client.middlewareStack);
      const e = event(1);
      await client.send(
        new PutEventsCommand({
          Entries: [
            {
              EventBusName: 'bus',
              Source: 'release-coordinator',
              DetailType: 'Coordinator Event',
              Detail: JSON.stringify(eventMessage(e, '')),
            },
          ],
        }),
      );
      await new EventBridgePublisher(http(EVENTBRIDGE_SERVICE, ourHandler, setup), 'bus', '').publish([e]);
      const [sdk, ours] = [sdkHandler.last(), ourHandler.last()];
      expect(ours).toEqual(sdk);
    },
  );

  it('EventBridge: failed entries are an error', async () => {
    const handler = new RecordingHandler().answer({
      body: '{"FailedEntryCount":1,"Entries":[{"ErrorCode":"X","ErrorMessage":"no such bus"}]}',
    });
    const p = new EventBridgePublisher(
      http(EVENTBRIDGE_SERVICE, handler, { region: 'us-west-2' }),
      'bus',
      '',
    );
    await expect(p.publish([event(1)])).rejects.toThrow('EventBridge refused 1 event(s): no such bus');
  });

  it('never lets a publishing failure reach the state change that is already stored', async () => {
    const handler = new RecordingHandler().answer({
      status: 400,
      body: '<ErrorResponse><Error><Code>Nope</Code></Error></ErrorResponse>',
    });
    const p = bestEffort(
      new SnsEventPublisher(http(SNS_SERVICE, handler, { region: 'eu-west-1' }), TOPIC, ''),
    );
    await expect(p.publish([event(1)])).resolves.toBeUndefined();
    expect(handler.requests.length).toBeGreaterThan(0);
  });

  it('chooses SNS, EventBridge or nothing from the env', () => {
    expect(eventPublisherFromEnv({ EVENTS_TOPIC_ARN: TOPIC })).not.toBe(noEventPublisher);
    expect(eventPublisherFromEnv({ EVENTS_BUS_NAME: 'bus' })).not.toBe(noEventPublisher);
    expect(eventPublisherFromEnv({})).toBe(noEventPublisher);
  });
});
