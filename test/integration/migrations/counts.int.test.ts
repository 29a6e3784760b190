import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrateCoordinator, SCHEMA_VERSION } from '#functions/adapters/dynamodb/migrate.js';
import { localClient } from '#local/dynamodb-local.js';
import { type CoordinatorApi, startCoordinatorApi } from '#test/helpers/coordinator-api.js';
import { checkCounts, wrongCounts } from '#test/helpers/counts.js';
import { loadFixture } from '#test/helpers/migration-fixtures.js';

/**
 * The counts' migration (schema 5: counts on the items their writers write anyway) on tables written by release
 * 0.1.0, whose code kept every count in counter items: test/fixtures/migrations/0.1.0 holds every item it left after
 * a published, a canceled and a staged release, two services, notes and events (test/fixtures/migrations/generate.ts
 * wrote them). Before the migration this release's counts of those lists are wrong; after it every list's count is
 * what paging through it finds, and stays so as records are added and removed.
 */
const raw = localClient(inject('ddbEndpoint'));
let api: CoordinatorApi;
let tables: { coordinator: string; studies: string };

const get = async (path: string) => {
  const res = await api.call('GET', path);
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.text}`);
  return res.body;
};

beforeAll(async () => {
  api = await startCoordinatorApi();
  tables = { coordinator: api.tables.COORDINATOR_TABLE, studies: api.tables.STUDIES_TABLE };
  await loadFixture(raw, tables.coordinator, 'coordinator.json');
  await loadFixture(raw, tables.studies, 'studies.json');
}, 60_000);
afterAll(async () => {
  await api?.close();
  raw.destroy();
});

describe('the counts migration on the tables of release 0.1.0', () => {
  it('is needed: before it, the counts this release reads are not those of the lists', async () => {
    expect(wrongCounts(await checkCounts(get)).length).toBeGreaterThan(0);
  });

  it('makes every count what paging finds, records schema 5, and changes nothing when run again', async () => {
    expect(await migrateCoordinator(api.doc, tables)).toBeGreaterThan(0);
    const schema = await api.doc.send(
      new GetCommand({ TableName: tables.coordinator, Key: { pk: 'SCHEMA', sk: 'VERSION' } }),
    );
    expect(schema.Item?.version).toBe(SCHEMA_VERSION);
    expect(SCHEMA_VERSION).toBe(5);
    const checks = await checkCounts(get);
    expect(wrongCounts(checks)).toEqual([]);
    // The fixture's lists are not empty: the check compares real numbers.
    expect(checks.find((c) => c.path === '/events')?.count).toBeGreaterThan(10);
    expect(checks.filter((c) => c.path.startsWith('/events?task=') && c.count > 0).length).toBeGreaterThan(2);
    expect(await migrateCoordinator(api.doc, tables)).toBe(0);
  });

  it('keeps them so as this release adds and removes records on the migrated data', async () => {
    const tasks = (await get('/tasks')).results as any[];
    const task = tasks[0];
    const release = String(task.release).split('/').pop();
    const service = String(task.task_service).split('/').pop();
    const added = await api.call('POST', '/events', {
      body: { event_type: 'info', message: 'after the migration', task: task.kf_id, task_service: service },
    });
    expect(added.status).toBe(200);
    const onRelease = await api.call('POST', '/events', {
      body: { event_type: 'warning', message: 'about the release', release, task: task.kf_id },
    });
    expect(onRelease.status).toBe(200);
    expect(wrongCounts(await checkCounts(get))).toEqual([]);
    expect((await api.call('DELETE', `/events/${onRelease.body.kf_id}`)).status).toBe(200);
    expect(wrongCounts(await checkCounts(get))).toEqual([]);
  });
});
