import { GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardOf, VIEW_SHARDS } from '#functions/adapters/dynamodb/common.js';
import { eventItem } from '#functions/adapters/dynamodb/events.js';
import { migrateCoordinator } from '#functions/adapters/dynamodb/migrate.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { encodeCursor, MAX_OFFSET } from '#functions/shared/list.js';
import { type CoordinatorApi, seedStudies, startCoordinatorApi } from '#test/helpers/coordinator-api.js';
import { type FakeTaskService, startFakeTaskService } from '#test/helpers/fake-task-service/index.js';

/**
 * Lists whose cost is their page: cursors in the links, the raw-offset maximum, exact counts kept by counters,
 * the filter combinations without a key of their own, and the one-time migration of data in the earlier layout.
 */
let api: CoordinatorApi;
let fake: FakeTaskService;
const S1 = 'SD_5CA1E001';
const S2 = 'SD_5CA1E002';
let release: { item_id: string; tasks: { item_id: string }[] };
let service: { item_id: string };

beforeAll(async () => {
  api = await startCoordinatorApi();
  fake = await startFakeTaskService();
  await seedStudies(api, [S1, S2]);
  service = (
    await api.call('POST', '/task-services', {
      body: { name: 'svc', description: '', author: '', url: fake.url },
    })
  ).body;
  release = (await api.call('POST', '/releases', { body: { name: 'r', studies: [S1] } })).body;
  for (let i = 0; i < 23; i++) {
    const res = await api.call('POST', '/events', {
      body: { message: `event ${i}`, release: release.item_id, task_service: service.item_id },
    });
    expect(res.status).toBe(200);
  }
});
afterAll(async () => {
  await fake?.stop();
  await api?.close();
});

/** Follows `next` from `path` to the end; returns every page's results. */
async function walk(path: string): Promise<{ pages: number; ids: string[]; counts: number[] }> {
  const ids: string[] = [];
  const counts: number[] = [];
  let url: string | null = `${api.baseUrl}${path}`;
  let pages = 0;
  while (url) {
    const res = await api.call('GET', url.slice(api.baseUrl.length));
    expect(res.status).toBe(200);
    ids.push(...res.body.results.map((r: { item_id: string }) => r.item_id));
    counts.push(res.body.count);
    url = res.body.next;
    pages++;
  }
  return { pages, ids, counts };
}

describe('cursors', () => {
  it('following next reads every event exactly once, newest first, on the sharded list too', async () => {
    const all = await walk('/events?limit=4');
    const total = all.counts[0];
    expect(new Set(all.counts)).toEqual(new Set([total]));
    expect(all.ids).toHaveLength(total);
    expect(new Set(all.ids).size).toBe(total);
    const byOffset = await api.call('GET', `/events?limit=100`);
    expect(byOffset.body.results.map((r: { item_id: string }) => r.item_id)).toEqual(all.ids);
  });

  it('previous from a cursor page gives back the page before it', async () => {
    const first = await api.call('GET', `/events?release=${release.item_id}&limit=5`);
    const second = await api.call('GET', first.body.next.slice(api.baseUrl.length));
    const third = await api.call('GET', second.body.next.slice(api.baseUrl.length));
    expect(third.body.previous).toMatch(/offset=5&cursor=/);
    const back = await api.call('GET', third.body.previous.slice(api.baseUrl.length));
    expect(back.body.results).toEqual(second.body.results);
    expect(back.body.next.replace(/cursor=[\w-]+/, '')).toBe(second.body.next.replace(/cursor=[\w-]+/, ''));
  });

  it('pages through a filter served in memory (a release-scoped combination) the same way', async () => {
    const all = await walk(`/events?release=${release.item_id}&task_service=${service.item_id}&limit=7`);
    expect(all.counts[0]).toBe(23);
    expect(new Set(all.ids).size).toBe(23);
    expect(all.pages).toBe(4);
  });

  it('answers a forged or foreign cursor with a 400 naming cursor, never a 500', async () => {
    for (const cursor of [
      'x',
      'eyJ2IjoxfQ',
      encodeCursor({ after: 'k' }).replace(/.$/, '!'),
      'A'.repeat(2000),
    ]) {
      const res = await api.call('GET', `/events?cursor=${encodeURIComponent(cursor)}`);
      expect(res.status, cursor).toBe(400);
      expect(res.body.error.fields.cursor).toBeDefined();
    }
    // A well-formed cursor is only a position: it shows nothing the list does not hold.
    const odd = await api.call('GET', `/tasks?cursor=${encodeCursor({ after: '\u0000' })}`);
    expect(odd.status).toBe(200);
    expect(odd.body.results).toEqual([]);
  });

  it(`accepts a raw offset up to ${MAX_OFFSET}; deeper is a 400 that points to next`, async () => {
    expect((await api.call('GET', `/events?offset=${MAX_OFFSET}`)).body.results).toEqual([]);
    const deep = await api.call('GET', `/events?offset=${MAX_OFFSET + 1}`);
    expect(deep.status).toBe(400);
    expect(deep.body.error.fields.offset[0]).toContain('next');
  });
});

describe('counts', () => {
  it('stay exact through a delete: the event leaves every list it was counted in', async () => {
    const before = await api.call('GET', `/events?task_service=${service.item_id}&limit=1`);
    const all = await api.call('GET', '/events?limit=1');
    const id = before.body.results[0].item_id;
    expect((await api.call('DELETE', `/events/${id}`)).status).toBe(200);
    expect((await api.call('GET', `/events?task_service=${service.item_id}`)).body.count).toBe(
      before.body.count - 1,
    );
    expect((await api.call('GET', '/events')).body.count).toBe(all.body.count - 1);
    expect((await api.call('DELETE', `/events/${id}`)).status).toBe(404);
    expect((await api.call('GET', '/events')).body.count).toBe(all.body.count - 1);
  });

  it('follow enabled across a PATCH of a task service', async () => {
    const on = (await api.call('GET', '/task-services?enabled=true')).body.count;
    const off = (await api.call('GET', '/task-services?enabled=false')).body.count;
    const patched = await api.call('PATCH', `/task-services/${service.item_id}`, {
      body: { enabled: false },
    });
    expect(patched.status).toBe(200);
    expect((await api.call('GET', '/task-services?enabled=true')).body.count).toBe(on - 1);
    const disabled = await api.call('GET', '/task-services?enabled=false');
    expect(disabled.body.count).toBe(off + 1);
    expect(disabled.body.results.map((s: { item_id: string }) => s.item_id)).toContain(service.item_id);
    await api.call('PATCH', `/task-services/${service.item_id}`, { body: { enabled: true } });
    expect((await api.call('GET', '/task-services?enabled=true')).body.count).toBe(on);
  });

  it("count a service's tasks and a study's releases and notes", async () => {
    const tasks = await api.call('GET', `/tasks?task_service=${service.item_id}`);
    expect(tasks.body.count).toBe(1);
    expect(tasks.body.results[0].item_id).toBe(release.tasks[0].item_id);
    expect((await api.call('GET', `/releases?study=${S1}`)).body.count).toBe(1);
    const note = await api.call('POST', '/release-notes', {
      body: { description: 'n', author: 'a', release: release.item_id, study: S1 },
    });
    expect((await api.call('GET', `/release-notes?study=${S1}`)).body.count).toBe(1);
    await api.call('PATCH', `/release-notes/${note.body.item_id}`, { body: { study: S2 } });
    expect((await api.call('GET', `/release-notes?study=${S1}`)).body.count).toBe(0);
    expect((await api.call('GET', `/release-notes?study=${S2}`)).body.count).toBe(1);
    // The page of releases brings the note along without a query per release.
    const listed = await api.call('GET', '/releases?limit=100');
    const mine = listed.body.results.find((r: { item_id: string }) => r.item_id === release.item_id);
    expect(mine.notes.map((n: { item_id: string }) => n.item_id)).toEqual([note.body.item_id]);
    expect(mine.tasks.map((t: { item_id: string }) => t.item_id)).toEqual([release.tasks[0].item_id]);
    await api.call('DELETE', `/release-notes/${note.body.item_id}`);
    expect((await api.call('GET', `/release-notes?study=${S2}`)).body.count).toBe(0);
    const after = await api.call('GET', '/releases?limit=100');
    expect(after.body.results.find((r: { item_id: string }) => r.item_id === release.item_id).notes).toEqual(
      [],
    );
  });
});

describe('combinations without a key of their own', () => {
  it('are a 400 naming the parameter and what narrows the list; with release they are served', async () => {
    const cases = [
      [`/tasks?task_service=${service.item_id}&state=pending`, 'state'],
      [`/events?task_service=${service.item_id}&study=${S1}`, 'study'],
      [`/releases?state=staged&study=${S1}`, 'study'],
    ] as const;
    for (const [path, field] of cases) {
      const res = await api.call('GET', path);
      expect(res.status, path).toBe(400);
      expect(res.body.error.fields[field][0], path).toMatch(/release|state/);
    }
    const narrowed = await api.call(
      'GET',
      `/tasks?task_service=${service.item_id}&state=pending&release=${release.item_id}`,
    );
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.count).toBe(1);
  });
});

describe('stored data in the earlier layout', () => {
  it('is moved to the current one by the migration: keys, counts, task views', async () => {
    const tables = api.tables;
    const t = { coordinator: tables.COORDINATOR_TABLE, studies: tables.STUDIES_TABLE };
    const at = '2024-05-01T00:00:00.000000Z';
    const old = (item: Record<string, unknown>) =>
      api.doc.send(new PutCommand({ TableName: t.coordinator, Item: item }));
    const release0 = {
      id: 'RE_01D0000A',
      name: 'old',
      description: '',
      state: 'staged',
      studies: [S1],
      version: '0.0.1',
      createdAt: at,
      tags: [],
      author: 'a',
      isMajor: false,
    };
    await old({
      pk: 'RE#RE_01D0000A',
      sk: 'RE',
      gsi1pk: 'RE',
      gsi1sk: `${at}#RE_01D0000A`,
      ...release0,
      waitToken: 'x',
    });
    await old({
      pk: 'RE#RE_01D0000A',
      sk: 'TA#TA_01D0000A',
      gsi1pk: 'TA',
      gsi1sk: `${at}#TA_01D0000A`,
      gsi2pk: 'TA_01D0000A',
      gsi2sk: 'TA',
      id: 'TA_01D0000A',
      releaseId: 'RE_01D0000A',
      taskServiceId: 'TS_01D0000A',
      serviceName: 's',
      state: 'staged',
      progress: 100,
      createdAt: at,
    });
    const event = {
      id: 'EV_01D0000A',
      eventType: 'info' as const,
      message: 'm',
      releaseId: 'RE_01D0000A',
      taskId: null,
      taskServiceId: 'TS_01D0000A',
      studyId: null,
      source: 'coordinator' as const,
      createdAt: at,
    };
    const { gsi1pk: _shard, ...current } = eventItem(event);
    await old({ ...current, gsi1pk: 'EV', gsi3pk: undefined, gsi3sk: undefined });
    const moved = await migrateCoordinator(api.doc, t);
    expect(moved).toBeGreaterThanOrEqual(3);
    expect(await migrateCoordinator(api.doc, t)).toBe(0);
    const got = await api.call('GET', '/releases/RE_01D0000A');
    expect(got.body.tasks.map((x: { item_id: string }) => x.item_id)).toEqual(['TA_01D0000A']);
    expect((await api.call('GET', '/tasks?task_service=TS_01D0000A')).body.count).toBe(1);
    expect((await api.call('GET', '/events?task_service=TS_01D0000A')).body.count).toBe(1);
    const staged = await api.call('GET', '/releases?state=staged&limit=100');
    expect(staged.body.results.map((r: { item_id: string }) => r.item_id)).toContain('RE_01D0000A');
    // The counts were recomputed from the items: they match what the lists hold.
    const all = await walk('/events?limit=50');
    expect(all.ids).toHaveLength(all.counts[0]);
    const items = (await api.doc.send(new ScanCommand({ TableName: t.coordinator }))).Items ?? [];
    expect(items.filter((i) => i.gsi1pk === 'EV')).toEqual([]);
    expect(items.find((i) => i.sk === 'RE' && i.id === 'RE_01D0000A')?.waitToken).toBe('x');
  });

  it('moves a task view kept on the release item to its own item, which task changes then update', async () => {
    const tables = api.tables;
    const t = { coordinator: tables.COORDINATOR_TABLE, studies: tables.STUDIES_TABLE };
    const at = '2024-06-01T00:00:00.000000Z';
    const put = (item: Record<string, unknown>) =>
      api.doc.send(new PutCommand({ TableName: t.coordinator, Item: item }));
    const release = {
      id: 'RE_02D0000A',
      name: 'viewed',
      description: '',
      state: 'running',
      studies: [S1],
      version: '0.0.2',
      createdAt: at,
      tags: [],
      author: 'a',
      isMajor: false,
    };
    const task = {
      id: 'TA_02D0000A',
      releaseId: 'RE_02D0000A',
      taskServiceId: 'TS_02D0000A',
      serviceName: 's',
      state: 'running',
      progress: 10,
      createdAt: at,
    };
    // The layout before the view had an item of its own: the view on the release item, the table marked at 2.
    await put({
      pk: 'RE#RE_02D0000A',
      sk: 'RE',
      gsi1pk: 'RE',
      gsi1sk: `${at}#RE_02D0000A`,
      gsi3pk: 'RE#ST#running',
      gsi3sk: `${at}#RE_02D0000A`,
      ...release,
      taskView: { TA_02D0000A: { s: 'running', p: 10, ts: 'TS_02D0000A', n: 's', c: at } },
    });
    await put({ pk: 'RE#RE_02D0000A', sk: 'TA#TA_02D0000A', gsi2pk: 'TA_02D0000A', gsi2sk: 'TA', ...task });
    await put({ pk: 'SCHEMA', sk: 'VERSION', version: 2 });
    expect(await migrateCoordinator(api.doc, t)).toBeGreaterThan(0);
    const stored = async (sk: string) =>
      (
        await api.doc.send(
          new GetCommand({
            TableName: t.coordinator,
            Key: { pk: 'RE#RE_02D0000A', sk },
            ConsistentRead: true,
          }),
        )
      ).Item;
    expect((await stored('RE'))?.taskView).toBeUndefined();
    expect((await stored('RE#V'))?.taskView).toMatchObject({ TA_02D0000A: { s: 'running', p: 10 } });
    // Its shards carry the release's state (what a callback's condition reads), and the task's shard its count.
    const group = `RE#V#${shardOf('TA_02D0000A', VIEW_SHARDS)}`;
    expect(await stored(group)).toMatchObject({ phase: 'running', 'n:running': 1 });
    expect(await stored('RE#V#0')).toMatchObject({ phase: 'running' });
    expect(await stored('TA#TA_02D0000A')).toMatchObject({ vgs: 1 });
    // A task change now writes the task's view shard, and both the release and the list show it.
    await new DynamoReleaseRepository(api.doc, t).applyChange({
      releaseId: 'RE_02D0000A',
      tasks: [{ taskId: 'TA_02D0000A', expectState: 'running', toState: 'staged', progress: 100 }],
    });
    expect((await stored('RE#V'))?.taskView).toMatchObject({ TA_02D0000A: { s: 'running', p: 10 } });
    expect(await stored(group)).toMatchObject({
      's:TA_02D0000A': 'staged',
      'p:TA_02D0000A': 100,
      'n:running': 0,
      'n:staged': 1,
    });
    const one = await api.call('GET', '/releases/RE_02D0000A');
    expect(one.body.tasks[0]).toMatchObject({ state: 'staged', progress: 100 });
    const list = await api.call('GET', '/releases?limit=100');
    const listed = list.body.results.find((r: { item_id: string }) => r.item_id === 'RE_02D0000A');
    expect(listed.tasks[0]).toMatchObject({ state: 'staged', progress: 100 });
  });
});
