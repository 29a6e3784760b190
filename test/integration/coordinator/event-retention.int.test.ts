import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DynamoEventRepository } from '#functions/adapters/dynamodb/events.js';
import { expireEvents } from '#functions/coordinator/event-retention.js';
import { localClient } from '#local/dynamodb-local.js';
import { useLocalTables } from '#test/helpers/tables.js';

/**
 * The events' retention (EVENT_RETENTION_DAYS): what the reconciler deletes, oldest first, a page at a time, with
 * every list's count kept exact.
 */
let doc: DynamoDBDocumentClient;
let tables: { coordinator: string; studies: string };
const DAY = 86_400_000;
const NOW = Date.parse('2026-06-01T00:00:00Z');

beforeAll(async () => {
  const env = await useLocalTables();
  doc = DynamoDBDocumentClient.from(localClient(inject('ddbEndpoint')), {
    marshallOptions: { removeUndefinedValues: true },
  });
  tables = { coordinator: env.COORDINATOR_TABLE, studies: env.STUDIES_TABLE };
});
afterAll(() => doc?.destroy());

describe('event retention', () => {
  it('deletes the events older than the retention, oldest first and a page at a time, and their counts', async () => {
    const at = (ms: number) => new DynamoEventRepository(doc, tables, { nowMs: () => ms });
    const old = [];
    for (const days of [400, 300, 200])
      old.push(await at(NOW - days * DAY).create({ eventType: 'info', message: `${days}` }));
    const recent = await at(NOW - 10 * DAY).create({ eventType: 'warning', message: 'recent' });
    const events = at(NOW);
    const clock = { nowMs: () => NOW };
    const page = { limit: 10, offset: 0 };

    expect(await expireEvents({ events, clock }, 0)).toBe(0);
    // 250 days: the two oldest go, one page of at most 1 per run here.
    expect(await expireEvents({ events, clock }, 250, 1)).toBe(1);
    expect(await events.get(old[0].id)).toBeNull();
    expect(await expireEvents({ events, clock }, 250, 1)).toBe(1);
    expect(await expireEvents({ events, clock }, 250, 1)).toBe(0);
    const left = await events.list({}, page);
    expect(left.count).toBe(2);
    expect(left.items.map((e) => e.id)).toEqual([recent.id, old[2].id]);
    expect((await events.list({}, page)).items).toHaveLength(left.count);
  });
});
