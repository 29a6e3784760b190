import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DynamoFileRepository } from '#functions/adapters/dynamodb/files-repository.js';
import {
  MIGRATIONS,
  type Migration,
  type MigrationReport,
  recordedMigrations,
  runMigrations,
} from '#functions/adapters/dynamodb/migrations.js';
import { APP_VERSION } from '#functions/shared/version.js';
import { localClient } from '#local/dynamodb-local.js';
import { loadHandler } from '#local/handlers.js';
import { type CoordinatorApi, startCoordinatorApi } from '#test/helpers/coordinator-api.js';
import { loadFixture } from '#test/helpers/migration-fixtures.js';

/**
 * The deploy's migration step (functions/coordinator/handlers/migrate.ts, run by the CDK trigger) on tables written
 * by the previous release: test/fixtures/migrations/0.1.0 holds every item 0.1.0's code left after a published, a
 * canceled and a staged release, two services, notes, events, a file and a developer token
 * (test/fixtures/migrations/generate.ts wrote them). This release's API then reads them as they are.
 */
const raw = localClient(inject('ddbEndpoint'));
let api: CoordinatorApi;
let doc: DynamoDBDocumentClient;
let tables: { coordinator: string; studies: string; files: string };

beforeAll(async () => {
  api = await startCoordinatorApi();
  doc = api.doc;
  tables = {
    coordinator: api.tables.COORDINATOR_TABLE,
    studies: api.tables.STUDIES_TABLE,
    files: api.tables.FILES_TABLE,
  };
  await loadFixture(raw, tables.coordinator, 'coordinator.json');
  await loadFixture(raw, tables.studies, 'studies.json');
  await loadFixture(raw, tables.files, 'files.json');
}, 60_000);
afterAll(async () => {
  await api?.close();
  raw.destroy();
});

describe('migrations over the tables of release 0.1.0', () => {
  it('the deploy step moves the coordinator table to version 5 and finds the others at their latest', async () => {
    const migrate = await loadHandler<() => Promise<MigrationReport>>(
      'functions/coordinator/handlers/migrate.ts',
    );
    const report = await migrate();
    expect(report).toEqual({
      release: APP_VERSION,
      versions: { coordinator: { from: 4, to: 5 }, studies: { from: 4, to: 4 }, files: { from: 4, to: 4 } },
      applied: [
        {
          table: 'coordinator',
          version: 5,
          name: MIGRATIONS.find((m) => m.version === 5)?.name,
          items: expect.any(Number),
        },
      ],
    });
    expect(report.applied[0].items).toBeGreaterThan(0);
    // A second deploy finds every table at its latest and changes nothing.
    expect((await migrate()).applied).toEqual([]);
  });

  it("this release's API reads what 0.1.0 wrote: services, releases, tasks, events, counts", async () => {
    const services = await api.call('GET', '/task-services');
    expect(services.body.count).toBe(2);
    for (const s of services.body.results)
      expect(s).toMatchObject({ quarantined: false, quarantine_reason: null, quarantined_at: null });
    const releases = await api.call('GET', '/releases?limit=10');
    expect(releases.body.results.map((r: any) => r.state).sort()).toEqual([
      'canceled',
      'published',
      'staged',
    ]);
    const staged = releases.body.results.find((r: any) => r.state === 'staged');
    expect(staged.tasks).toHaveLength(1);
    const events = await api.call('GET', '/events?limit=100');
    expect(events.body.count).toBe(events.body.results.length);
    expect((await api.call('GET', '/maintenance')).body).toMatchObject({ on: false, running_releases: 1 });
    // A 0.1.0 service can be quarantined, which fails its task of the staged release.
    const bound = services.body.results.find((s: any) => s.client_id === 'task-service');
    const q = await api.call('POST', `/task-services/${bound.kf_id}/quarantine`, {
      body: { reason: 'test' },
    });
    expect(q.status).toBe(200);
    expect(q.body.failed_tasks).toEqual([{ task_id: staged.tasks[0].kf_id, release_id: staged.kf_id }]);
    const files = new DynamoFileRepository(doc, tables.files);
    const study = releases.body.results[0].studies[0];
    expect((await files.listFiles(study, { limit: 10, offset: 0 })).count).toBe(1);
  });

  it('a table below the latest version gets every migration above it, once, each recorded with its release', async () => {
    // What a table from before the records looked like: no SCHEMA item at all.
    await raw.send(
      new DeleteItemCommand({ TableName: tables.files, Key: { pk: { S: 'SCHEMA' }, sk: { S: 'VERSION' } } }),
    );
    let ran = 0;
    const next: Migration = {
      version: 5,
      table: 'files',
      name: 'a later release’s migration',
      run: async () => {
        ran++;
        return 7;
      },
    };
    const first = await runMigrations(doc, tables, { migrations: [...MIGRATIONS, next], release: '9.9.9' });
    expect(first.versions.files).toEqual({ from: 0, to: 5 });
    expect(first.applied.map((m) => [m.table, m.version])).toEqual([
      ['files', 4],
      ['files', 5],
    ]);
    // The coordinator table is at its latest (the deploy step above took it there): nothing runs on it.
    expect(first.versions.coordinator).toEqual({ from: 5, to: 5 });
    const recorded = await recordedMigrations(doc, tables.files);
    expect(recorded.map((r) => [r.version, r.release, r.items])).toEqual([
      [4, '9.9.9', expect.any(Number)],
      [5, '9.9.9', 7],
    ]);
    const version = await doc.send(
      new GetCommand({ TableName: tables.files, Key: { pk: 'SCHEMA', sk: 'VERSION' } }),
    );
    expect(version.Item?.version).toBe(5);
    // Again: nothing to do, one read per table.
    const again = await runMigrations(doc, tables, { migrations: [...MIGRATIONS, next] });
    expect(again.applied).toEqual([]);
    expect(ran).toBe(1);
  });
});
