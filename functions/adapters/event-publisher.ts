import { type EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { PublishBatchCommand, type SNSClient } from '@aws-sdk/client-sns';
import type { CoordinatorEvent } from '../coordinator/model.js';
import type { EventPublisher } from '../coordinator/ports.js';
import { eventJson } from '../coordinator/views.js';
import { parseEnv } from '../shared/config.js';
import { log } from '../shared/log.js';
import * as z from '../shared/zod.js';
import { eventBridgeClient, snsClient } from './aws.js';

/**
 * Fans coordinator events out to subscribers (a Slack notifier, say) after they are stored. DynamoDB stays the
 * record: events are written in the same transaction as the state change they describe, and publishing happens
 * after that commit, best effort — a failed publish is logged and never undoes or fails the change.
 */
export type { EventPublisher };

export const SOURCE = 'release-coordinator';
export const DETAIL_TYPE = 'Coordinator Event';

/** The spec's Event JSON plus the bare ids, so a subscriber needs no URL parsing. */
export function eventMessage(e: CoordinatorEvent, baseUrl: string) {
  return {
    ...eventJson(e, baseUrl),
    release_id: e.releaseId,
    task_id: e.taskId,
    task_service_id: e.taskServiceId,
  };
}

const chunks = <T>(items: readonly T[], size: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
};

export class SnsEventPublisher implements EventPublisher {
  constructor(
    private readonly client: SNSClient,
    private readonly topicArn: string,
    private readonly baseUrl: string,
  ) {}

  async publish(events: readonly CoordinatorEvent[]): Promise<void> {
    for (const batch of chunks(events, 10)) {
      const out = await this.client.send(
        new PublishBatchCommand({
          TopicArn: this.topicArn,
          PublishBatchRequestEntries: batch.map((e, i) => ({
            Id: String(i),
            Message: JSON.stringify(eventMessage(e, this.baseUrl)),
            // event_type lets a subscription filter (only errors to the on-call channel); source lets a subscriber
            // take only the coordinator's own events (state changes), never a client's.
            MessageAttributes: {
              event_type: { DataType: 'String', StringValue: e.eventType },
              source: { DataType: 'String', StringValue: e.source },
            },
          })),
        }),
      );
      if (out.Failed?.length)
        throw new Error(`SNS refused ${out.Failed.length} event(s): ${out.Failed[0].Message}`);
    }
  }
}

export class EventBridgePublisher implements EventPublisher {
  constructor(
    private readonly client: EventBridgeClient,
    private readonly busName: string,
    private readonly baseUrl: string,
  ) {}

  async publish(events: readonly CoordinatorEvent[]): Promise<void> {
    for (const batch of chunks(events, 10)) {
      const out = await this.client.send(
        new PutEventsCommand({
          Entries: batch.map((e) => ({
            Source: SOURCE,
            DetailType: DETAIL_TYPE,
            Detail: JSON.stringify(eventMessage(e, this.baseUrl)),
            EventBusName: this.busName,
          })),
        }),
      );
      if (out.FailedEntryCount)
        throw new Error(
          `EventBridge refused ${out.FailedEntryCount} event(s): ${out.Entries?.find((x) => x.ErrorMessage)?.ErrorMessage}`,
        );
    }
  }
}

export const noEventPublisher: EventPublisher = { publish: async () => {} };

/** Never lets a publishing problem reach the caller: the events are already stored. */
export function bestEffort(inner: EventPublisher): EventPublisher {
  return {
    async publish(events) {
      if (events.length === 0) return;
      try {
        await inner.publish(events);
      } catch (err) {
        log.warn('event publish failed', {
          events: events.map((e) => e.id),
          error: err instanceof Error ? err.message : String(err),
        });
      }
    },
  };
}

const publisherEnv = z.object({
  EVENTS_TOPIC_ARN: z.optional(z.string().check(z.startsWith('arn:'))),
  EVENTS_BUS_NAME: z.optional(z.string().check(z.minLength(1))),
  /** Absolute links in the published events; without it they are paths like /releases/RE_... */
  PUBLIC_BASE_URL: z.optional(z.url()),
});

/** SNS when EVENTS_TOPIC_ARN is set, EventBridge when EVENTS_BUS_NAME is set, nothing otherwise. */
export function eventPublisherFromEnv(env: NodeJS.ProcessEnv = process.env): EventPublisher {
  const cfg = parseEnv(publisherEnv, env);
  const base = (cfg.PUBLIC_BASE_URL ?? '').replace(/\/$/, '');
  if (cfg.EVENTS_TOPIC_ARN) return bestEffort(new SnsEventPublisher(snsClient(), cfg.EVENTS_TOPIC_ARN, base));
  if (cfg.EVENTS_BUS_NAME)
    return bestEffort(new EventBridgePublisher(eventBridgeClient(), cfg.EVENTS_BUS_NAME, base));
  return noEventPublisher;
}

let shared: EventPublisher | undefined;
/** One publisher per container, configured from the env at first use. */
export function eventPublisher(): EventPublisher {
  shared ??= eventPublisherFromEnv();
  return shared;
}
