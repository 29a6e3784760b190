import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoEventRepository } from '#functions/adapters/dynamodb/events.js';
import type { EventFilters } from '#functions/coordinator/ports.js';
import { type CoordinatorApi, seedStudies, startCoordinatorApi } from '#test/helpers/coordinator-api.js';
import { type FakeTaskService, startFakeTaskService } from '#test/helpers/fake-task-service/index.js';

/**
 * `GET /events?release=&task=`, `?task=` and `?release=&study=` are served by keys, on DynamoDB Local: what they
 * read is the page they answer (and its counters), not every event of the release. The release here holds many
 * events of other kinds, which a read of the whole release would bring back.
 */
let api: CoordinatorApi;
let fake: FakeTaskService;
const S1 = 'SD_1111AAAA';
const S2 = 'SD_2222AAAA';
let release: any;
let taskA: string;
let taskB: string;
const ids: Record<string, string[]> = { releaseTaskA: [], taskAOnly: [], releaseS1: [], taskBS1: [] };

const post = async (body: Record<string, unknown>) => {
  const res = await api.call('POST', '/events', { body: { message: 'm', ...body } });
  expect(res.status).toBe(200);
  return res.body.item_id as string;
};

beforeAll(async () => {
  api = await startCoordinatorApi();
  fake = await startFakeTaskService();
  await seedStudies(api, [S1, S2]);
  for (const name of ['a', 'b'])
    await api.call('POST', '/task-services', { body: { name, description: '', author: '', url: fake.url } });
  release = (await api.call('POST', '/releases', { body: { name: 'r', studies: [S1, S2] } })).body;
  [taskA, taskB] = release.tasks.map((t: { item_id: string }) => t.item_id);
  // 40 events of the release that match none of the filters below.
  for (let i = 0; i < 40; i++) await post({ release: release.item_id, study: i % 2 ? S2 : undefined });
  for (let i = 0; i < 3; i++) ids.releaseTaskA.push(await post({ release: release.item_id, task: taskA }));
  for (let i = 0; i < 2; i++) ids.taskAOnly.push(await post({ task: taskA }));
  for (let i = 0; i < 2; i++) ids.releaseS1.push(await post({ release: release.item_id, study: S1 }));
  ids.taskBS1.push(await post({ release: release.item_id, task: taskB, study: S1 }));
});
afterAll(async () => {
  await fake?.stop();
  await api?.close();
});

/** The repository on a document client that counts the items DynamoDB sends back. */
function countingRepo() {
  const seen = { items: 0 };
  const send = (async (command: Parameters<DynamoDBDocumentClient['send']>[0]) => {
    const out = (await api.doc.send(command as never)) as {
      Items?: unknown[];
      Item?: unknown;
      Responses?: Record<string, unknown[]>;
    };
    seen.items +=
      (out.Items?.length ?? 0) +
      (out.Item ? 1 : 0) +
      Object.values(out.Responses ?? {}).reduce((n, r) => n + r.length, 0);
    return out;
  }) as DynamoDBDocumentClient['send'];
  const repo = new DynamoEventRepository(
    { send },
    { coordinator: api.tables.COORDINATOR_TABLE, studies: '-' },
  );
  return { repo, seen };
}

const idsOf = (res: { body: { results: { item_id: string }[] } }) => res.body.results.map((e) => e.item_id);

describe('events read by key', () => {
  it('release and task: the events naming both, newest first, with their count', async () => {
    // The creation event of the release names no task; its tasks' state events come with orchestration (none here).
    const res = await api.call('GET', `/events?release=${release.item_id}&task=${taskA}&limit=2`);
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(3);
    expect(idsOf(res)).toEqual(ids.releaseTaskA.slice(-2).reverse());
    const next = await api.call('GET', res.body.next.slice(api.baseUrl.length));
    expect(idsOf(next)).toEqual([ids.releaseTaskA[0]]);

    const { repo, seen } = countingRepo();
    const page = await repo.list({ releaseId: release.item_id, taskId: taskA }, { limit: 2, offset: 0 });
    expect(page.count).toBe(3);
    // The page (2, read in a chunk of at most `limit`) and the one counter item: not the release's 50 events.
    expect(seen.items).toBeLessThanOrEqual(3);
  });

  it('task alone: the events naming it, with or without its release', async () => {
    const res = await api.call('GET', `/events?task=${taskA}&limit=100`);
    expect(res.body.count).toBe(5);
    expect(new Set(idsOf(res))).toEqual(new Set([...ids.releaseTaskA, ...ids.taskAOnly]));
    const { repo, seen } = countingRepo();
    expect((await repo.list({ taskId: taskA }, { limit: 100, offset: 0 })).count).toBe(5);
    // The task's release (one index entry), its five events and two counter items.
    expect(seen.items).toBeLessThanOrEqual(8);
  });

  it('release and study: the events naming both', async () => {
    const res = await api.call('GET', `/events?release=${release.item_id}&study=${S1}&limit=100`);
    expect(res.body.count).toBe(3);
    expect(idsOf(res)).toEqual([...ids.releaseS1, ...ids.taskBS1].reverse());
    const { repo, seen } = countingRepo();
    const filters: EventFilters = { releaseId: release.item_id, studyId: S1 };
    expect((await repo.list(filters, { limit: 100, offset: 0 })).count).toBe(3);
    expect(seen.items).toBeLessThanOrEqual(4);
    // A third filter narrows the pair's events in memory: one task's, one release's of one study.
    const three = await api.call('GET', `/events?release=${release.item_id}&study=${S1}&task=${taskB}`);
    expect(idsOf(three)).toEqual(ids.taskBS1);
    expect(three.body.count).toBe(1);
  });

  it('a task of another release, or a deleted event, is not counted', async () => {
    const other = (await api.call('POST', '/releases', { body: { name: 'r2', studies: [S2] } })).body;
    const res = await api.call('GET', `/events?release=${other.item_id}&task=${taskA}`);
    expect(res.body).toMatchObject({ count: 0, results: [] });
    expect((await api.call('DELETE', `/events/${ids.releaseS1[0]}`)).status).toBe(200);
    const after = await api.call('GET', `/events?release=${release.item_id}&study=${S1}`);
    expect(after.body.count).toBe(2);
    expect(idsOf(after)).not.toContain(ids.releaseS1[0]);
    expect((await api.call('DELETE', `/events/${ids.taskAOnly[0]}`)).status).toBe(200);
    expect((await api.call('GET', `/events?task=${taskA}`)).body.count).toBe(4);
  });
});
