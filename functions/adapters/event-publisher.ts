import { partition } from '@aws-sdk/core/client';
import { type HttpResponse, loadJsonRpcErrorCode } from '@smithy/core/protocols';
import { toUtf8 } from '@smithy/core/serde';
import type { CoordinatorEvent } from '../coordinator/model.js';
import type { EventPublisher } from '../coordinator/ports.js';
import { eventJson } from '../coordinator/views.js';
import { parseEnv } from '../shared/config.js';
import { log } from '../shared/log.js';
import * as z from '../shared/zod.js';
import {
  type AwsHttp,
  customEndpoint,
  drain,
  endpointPath,
  errorMetadata,
  postRequest,
  type ServiceError,
  type ServiceSettings,
} from './aws-http.js';
import { eventBridgeHttp, snsHttp } from './aws-signed.js';

/**
 * Fans coordinator events out to subscribers (a Slack notifier, say) after they are stored. DynamoDB stays the
 * record: events are written in the same transaction as the state change they describe, and publishing happens
 * after that commit, best effort — a failed publish is logged and never undoes or fails the change.
 *
 * SNS PublishBatch and EventBridge PutEvents are signed requests (functions/adapters/aws-http.ts) laid out as
 * @aws-sdk/client-sns and @aws-sdk/client-eventbridge lay them out (test/unit/orchestration/event-publisher.test.ts
 * compares them): the two SDK clients were about 37 KB of every function that writes events, which the Powertools
 * logger and metrics needed to stay under the 400 KB bundle limit.
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

/** A regional endpoint by the SDK's rulesets for SNS and EventBridge: the configured one, else <prefix>[-fips].<region>.<suffix>. */
export function regionalEndpoint(prefix: string, settings: ServiceSettings): URL {
  const custom = customEndpoint(settings);
  if (custom) return custom;
  const { region, useFipsEndpoint, useDualstackEndpoint } = settings;
  const p = partition(region);
  const suffix = useDualstackEndpoint ? p.dualStackDnsSuffix : p.dnsSuffix;
  return new URL(`https://${prefix}${useFipsEndpoint ? '-fips' : ''}.${region}.${suffix}`);
}

const requestTo = (url: URL, headers: Record<string, string>, body: string) =>
  postRequest(url, endpointPath(url), headers, body);

const xmlText = (xml: string, tag: string) =>
  new RegExp(`<${tag}>([^<]*)</${tag}>`)
    .exec(xml)?.[1]
    ?.replace(/&(lt|gt|quot|apos|amp);/g, (_, e: string) =>
      e === 'lt' ? '<' : e === 'gt' ? '>' : e === 'quot' ? '"' : e === 'apos' ? "'" : '&',
    );

/** An SNS (query protocol) error: `<ErrorResponse><Error><Code>…</Code><Message>…</Message></Error>`. */
export function snsError(response: HttpResponse, body: Uint8Array): ServiceError {
  const xml = toUtf8(body);
  const name = xmlText(xml, 'Code') ?? 'Unknown';
  const message = xmlText(xml, 'Message') ?? 'UnknownError';
  return Object.assign(new Error(message), errorMetadata(response), { name, message });
}

/** An EventBridge (JSON 1.1) error, read as the SDK reads it. */
export function eventBridgeError(response: HttpResponse, body: Uint8Array): ServiceError {
  let data: Record<string, unknown> = {};
  try {
    data = JSON.parse(toUtf8(body) || '{}');
  } catch {
    // Not JSON (a proxy's page): the status decides.
  }
  const name = loadJsonRpcErrorCode(response, data) || 'Unknown';
  const message = String(data.message ?? data.Message ?? 'UnknownError');
  return Object.assign(new Error(message), errorMetadata(response), { name, message });
}

/** SNS PublishBatch's form body, member by member as the SDK's query serializer writes it. */
export function publishBatchBody(
  topicArn: string,
  events: readonly CoordinatorEvent[],
  baseUrl: string,
): string {
  const form = new URLSearchParams({ Action: 'PublishBatch', Version: '2010-03-31', TopicArn: topicArn });
  events.forEach((e, i) => {
    const m = `PublishBatchRequestEntries.member.${i + 1}`;
    form.append(`${m}.Id`, String(i));
    form.append(`${m}.Message`, JSON.stringify(eventMessage(e, baseUrl)));
    // event_type lets a subscription filter (only errors to the on-call channel); source lets a subscriber take only
    // the coordinator's own events (state changes), never a client's.
    const attributes = [
      ['event_type', e.eventType],
      ['source', e.source],
    ];
    attributes.forEach(([name, value], j) => {
      const a = `${m}.MessageAttributes.entry.${j + 1}`;
      form.append(`${a}.Name`, name);
      form.append(`${a}.Value.DataType`, 'String');
      form.append(`${a}.Value.StringValue`, value);
    });
  });
  return form.toString().replace(/\+/g, '%20');
}

export class SnsEventPublisher implements EventPublisher {
  constructor(
    private readonly http: AwsHttp,
    private readonly topicArn: string,
    private readonly baseUrl: string,
  ) {}

  async publish(events: readonly CoordinatorEvent[]): Promise<void> {
    for (const batch of chunks(events, 10)) {
      const body = publishBatchBody(this.topicArn, batch, this.baseUrl);
      const res = await this.http.send(async () => {
        const url = regionalEndpoint('sns', await this.http.settings());
        return requestTo(url, { 'content-type': 'application/x-www-form-urlencoded' }, body);
      }, snsError);
      const xml = toUtf8(await drain(res));
      const failed = /<Failed>([\s\S]*?)<\/Failed>/.exec(xml)?.[1] ?? '';
      const count = failed.match(/<member>/g)?.length ?? 0;
      if (count) throw new Error(`SNS refused ${count} event(s): ${xmlText(failed, 'Message')}`);
    }
  }
}

export class EventBridgePublisher implements EventPublisher {
  constructor(
    private readonly http: AwsHttp,
    private readonly busName: string,
    private readonly baseUrl: string,
  ) {}

  async publish(events: readonly CoordinatorEvent[]): Promise<void> {
    for (const batch of chunks(events, 10)) {
      const body = JSON.stringify({
        Entries: batch.map((e) => ({
          Source: SOURCE,
          DetailType: DETAIL_TYPE,
          Detail: JSON.stringify(eventMessage(e, this.baseUrl)),
          EventBusName: this.busName,
        })),
      });
      const res = await this.http.send(async () => {
        const url = regionalEndpoint('events', await this.http.settings());
        return requestTo(
          url,
          { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'AWSEvents.PutEvents' },
          body,
        );
      }, eventBridgeError);
      const out = JSON.parse(toUtf8(await drain(res)) || '{}') as {
        FailedEntryCount?: number;
        Entries?: { ErrorMessage?: string }[];
      };
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
  if (cfg.EVENTS_TOPIC_ARN) return bestEffort(new SnsEventPublisher(snsHttp(), cfg.EVENTS_TOPIC_ARN, base));
  if (cfg.EVENTS_BUS_NAME)
    return bestEffort(new EventBridgePublisher(eventBridgeHttp(), cfg.EVENTS_BUS_NAME, base));
  return noEventPublisher;
}

let shared: EventPublisher | undefined;
/** One publisher per container, configured from the env at first use. */
export function eventPublisher(): EventPublisher {
  shared ??= eventPublisherFromEnv();
  return shared;
}
