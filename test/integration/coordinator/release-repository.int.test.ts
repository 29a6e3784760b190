import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DynamoEventRepository } from '#functions/adapters/dynamodb/events.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { viewGroup } from '#functions/adapters/dynamodb/releases/items.js';
import { groupsCompleted } from '#functions/adapters/dynamodb/releases/shard-stream.js';
import { DynamoStudyRepository } from '#functions/adapters/dynamodb/studies.js';
import { DynamoTaskServiceRepository } from '#functions/adapters/dynamodb/task-services.js';
import { releaseStateEvent, taskStateEvent } from '#functions/coordinator/event-messages.js';
import { PHASE_ENDS } from '#functions/coordinator/model.js';
import { ChangeConflictError } from '#functions/coordinator/ports.js';
import { freshCredentials } from '#functions/coordinator/service-credentials.js';
import { commit, releaseMove, taskPart } from '#functions/orchestration/changes.js';
import { localClient } from '#local/dynamodb-local.js';
import { TableStreamReader } from '#local/dynamodb-streams.js';
import { useLocalTables } from '#test/helpers/tables.js';

let doc: DynamoDBDocumentClient;
let releases: DynamoReleaseRepository;
let services: DynamoTaskServiceRepository;
let events: DynamoEventRepository;
let studies: DynamoStudyRepository;
let tables: { coordinator: string; studies: string };

beforeAll(async () => {
  // With streams: the completion tests read the coordinator table's stream as PhaseWatch does.
  const env = await useLocalTables({ streams: true });
  doc = DynamoDBDocumentClient.from(localClient(inject('ddbEndpoint')), {
    marshallOptions: { removeUndefinedValues: true },
  });
  tables = { coordinator: env.COORDINATOR_TABLE, studies: env.STUDIES_TABLE };
  releases = new DynamoReleaseRepository(doc, tables);
  services = new DynamoTaskServiceRepository(doc, tables);
  events = new DynamoEventRepository(doc, tables);
  studies = new DynamoStudyRepository(doc, tables);
  await studies.upsertMirrored({
    id: 'SD_00000001',
    name: 's',
    version: null,
    visible: true,
    createdAt: null,
  });
});
afterAll(() => doc?.destroy());

const newService = (name: string) =>
  services.create(
    {
      name,
      description: '',
      author: '',
      url: 'http://x',
      enabled: true,
      healthStatus: 'ok',
      lastOkStatus: 0,
      clientId: null,
    },
    freshCredentials(),
  );

async function newRelease(serviceCount = 2, repository = releases) {
  const svcs = await Promise.all(Array.from({ length: serviceCount }, (_, i) => newService(`s${i}`)));
  const guard = await services.readGuard();
  return repository.create(
    {
      name: 'r',
      description: '',
      studies: ['SD_00000001'],
      version: '0.0.1',
      tags: [],
      author: 'a',
      isMajor: false,
    },
    svcs,
    guard,
    () => [],
  );
}

describe('ReleaseChanges.applyChange', () => {
  it('moves release and tasks and writes the events in one transaction', async () => {
    const { release, tasks } = await newRelease();
    const written = await releases.applyChange({
      releaseId: release.id,
      expectState: 'initializing',
      toState: 'running',
      tasks: tasks.map((t) => ({ taskId: t.id, expectState: 'pending', toState: 'running', progress: 5 })),
      events: [
        releaseStateEvent(release, 'initializing', 'running'),
        ...tasks.map((t) => taskStateEvent(t, 'pending', 'running')),
      ],
      setExtras: { wakePending: true },
    });
    expect(written).toHaveLength(3);
    const agg = await releases.load(release.id);
    expect(agg?.release.state).toBe('running');
    expect(agg?.tasks.every((t) => t.state === 'running' && t.progress === 5)).toBe(true);
    expect(agg?.extras).toEqual({ wakePending: true });
    const listed = await events.list({ releaseId: release.id }, { limit: 10, offset: 0 });
    expect(listed.items.map((e) => e.message)).toContain(
      `release ${release.id}, version 0.0.1 changed from initializing to running`,
    );
  });

  it('writes nothing and names the culprit when one condition fails', async () => {
    const { release, tasks } = await newRelease();
    const err = await releases
      .applyChange({
        releaseId: release.id,
        expectState: 'initializing',
        toState: 'running',
        tasks: [
          { taskId: tasks[0].id, expectState: 'pending', toState: 'running' },
          { taskId: tasks[1].id, expectState: 'staged', toState: 'publishing' },
        ],
        events: [releaseStateEvent(release, 'initializing', 'running')],
      })
      .catch((e) => e);
    expect(err).toBeInstanceOf(ChangeConflictError);
    expect(err.status).toBe(409);
    expect(err.failed).toEqual([{ kind: 'task', id: tasks[1].id }]);
    const agg = await releases.load(release.id);
    expect(agg?.release.state).toBe('initializing');
    expect(agg?.tasks.every((t) => t.state === 'pending')).toBe(true);
    expect((await events.list({ releaseId: release.id }, { limit: 10, offset: 0 })).count).toBe(0);
  });

  it('refuses a change from an unexpected release state', async () => {
    const { release } = await newRelease(0);
    await expect(
      releases.applyChange({
        releaseId: release.id,
        expectState: ['staged', 'running'],
        toState: 'publishing',
      }),
    ).rejects.toMatchObject({ failed: [{ kind: 'release', id: release.id }] });
  });

  it('claims each published version once and stamps the studies', async () => {
    const a = (await newRelease(0)).release;
    const b = (await newRelease(0)).release;
    const publish = (id: string) =>
      releases.applyChange({
        releaseId: id,
        toState: 'published',
        version: '0.1.0',
        claimVersion: '0.1.0',
        studies: [
          { studyId: 'SD_00000001', lastPubVersion: '0.1.0', lastPubDate: '2026-01-01T00:00:00.000000Z' },
        ],
      });
    await publish(a.id);
    await expect(publish(b.id)).rejects.toMatchObject({ failed: [{ kind: 'version', id: '0.1.0' }] });
    expect((await releases.load(b.id))?.release.version).toBe('0.0.1');
    expect(await releases.highestPublishedVersion()).toBe('0.1.0');
    await releases.applyChange({ releaseId: b.id, claimVersion: '0.10.0' });
    expect(await releases.highestPublishedVersion()).toBe('0.10.0');
    expect((await studies.get('SD_00000001'))?.lastPubVersion).toBe('0.1.0');
  });

  it('exchangeExtras returns the previous values atomically (a latch)', async () => {
    const { release } = await newRelease(0);
    expect(await releases.exchangeExtras(release.id, { set: { waitToken: 't1' } })).toEqual({});
    expect(
      await releases.exchangeExtras(release.id, { set: { wakePending: true }, remove: ['waitToken'] }),
    ).toEqual({
      waitToken: 't1',
    });
    expect((await releases.load(release.id))?.extras).toEqual({ wakePending: true });
    expect(await releases.exchangeExtras('RE_ZZZZZZZZ', { set: { x: 1 } })).toBeNull();
    await expect(releases.exchangeExtras(release.id, { set: { state: 'published' } })).rejects.toThrow(
      /Release field/,
    );
  });

  it('lists releases by state', async () => {
    const { release } = await newRelease(0);
    await releases.applyChange({ releaseId: release.id, toState: 'canceling' });
    const found = await releases.listByStates(['canceling']);
    expect(found.map((r) => r.id)).toContain(release.id);
    expect(found.every((r) => r.state === 'canceling')).toBe(true);
  });

  it('keeps exactly the releases that are not terminal in the active index, with their extras', async () => {
    const { release: kept } = await newRelease(0);
    const { release: ended } = await newRelease(0);
    await releases.exchangeExtras(kept.id, { set: { generation: 2 } });
    await releases.applyChange({ releaseId: kept.id, toState: 'staged' });
    await releases.applyChange({ releaseId: ended.id, toState: 'failed' });
    const item = async (id: string) =>
      (
        await doc.send(
          new GetCommand({ TableName: process.env.COORDINATOR_TABLE, Key: { pk: `RE#${id}`, sk: 'RE' } }),
        )
      ).Item;
    // The change that ends a release takes it out of the index in the same write.
    expect((await item(ended.id))?.gsi2pk).toBeUndefined();
    expect((await item(kept.id))?.gsi2pk).toBe('ACTIVE#RE');
    const active = await releases.listActive();
    const ids = active.map((a) => a.release.id);
    expect(ids).toContain(kept.id);
    expect(ids).not.toContain(ended.id);
    expect(active.find((a) => a.release.id === kept.id)).toMatchObject({
      release: { state: 'staged' },
      extras: { generation: 2 },
    });
  });

  it('puts releases written before the active index into it, once', async () => {
    const { release } = await newRelease(0);
    await doc.send(
      new UpdateCommand({
        TableName: process.env.COORDINATOR_TABLE,
        Key: { pk: `RE#${release.id}`, sk: 'RE' },
        UpdateExpression: 'REMOVE gsi2pk, gsi2sk',
      }),
    );
    expect((await releases.listActive()).map((a) => a.release.id)).not.toContain(release.id);
    expect(await releases.indexActiveReleases()).toContain(release.id);
    expect((await releases.listActive()).map((a) => a.release.id)).toContain(release.id);
    expect(await releases.indexActiveReleases()).not.toContain(release.id);
  });

  it('raiseExtra only ever raises a counter, and says what it holds', async () => {
    const { release } = await newRelease(0);
    expect(await releases.raiseExtra(release.id, 'generation', 1)).toBe(1);
    expect(await releases.raiseExtra(release.id, 'generation', 1)).toBe(1);
    expect(await releases.raiseExtra(release.id, 'generation', 3)).toBe(3);
    expect(await releases.raiseExtra(release.id, 'generation', 2)).toBe(3);
    expect(await releases.raiseExtra('RE_ZZZZZZZZ', 'generation', 1)).toBeNull();
    // Concurrent claims of the same next value: all see it claimed, once.
    const both = await Promise.all([4, 4, 4].map((to) => releases.raiseExtra(release.id, 'generation', to)));
    expect(both).toEqual([4, 4, 4]);
  });

  it('exchangeExtrasInOrder writes only while no newer writer has, and tells a newer writer from a missing release', async () => {
    const { release } = await newRelease(0);
    const order = (value: string) => ({ name: 'waitSeq', value });
    expect(
      await releases.exchangeExtrasInOrder(release.id, { set: { waitToken: 't5' } }, order('5')),
    ).toEqual({});
    // A late writer of an older order changes nothing.
    expect(await releases.exchangeExtrasInOrder(release.id, { set: { waitToken: 't4' } }, order('4'))).toBe(
      'superseded',
    );
    expect((await releases.load(release.id))?.extras).toEqual({ waitToken: 't5', waitSeq: '5' });
    // The same order again (a retried attempt of the same wait) and a newer one both write.
    expect(
      await releases.exchangeExtrasInOrder(release.id, { set: { waitToken: 't5b' } }, order('5')),
    ).toEqual({
      waitToken: 't5',
      waitSeq: '5',
    });
    await releases.exchangeExtrasInOrder(release.id, { set: { waitToken: 't6' } }, order('6'));
    expect((await releases.load(release.id))?.extras).toEqual({ waitToken: 't6', waitSeq: '6' });
    expect(
      await releases.exchangeExtrasInOrder('RE_ZZZZZZZZ', { set: { waitToken: 't' } }, order('1')),
    ).toBeNull();
  });

  it('removeExtraIf removes a value only while it is still the same', async () => {
    const { release } = await newRelease(0);
    await releases.exchangeExtras(release.id, { set: { waitToken: 't2' } });
    await releases.removeExtraIf(release.id, 'waitToken', 't1');
    expect((await releases.load(release.id))?.extras.waitToken).toBe('t2');
    await releases.removeExtraIf(release.id, 'waitToken', 't2');
    expect((await releases.load(release.id))?.extras.waitToken).toBeUndefined();
  });
});

describe('the wake latch item', () => {
  const get = async (pk: string, sk: string) =>
    (await doc.send(new GetCommand({ TableName: tables.coordinator, Key: { pk, sk }, ConsistentRead: true })))
      .Item;

  it('takes every latch write, so the indexed release item is not rewritten, and a release move clears it', async () => {
    const { release } = await newRelease(1);
    const before = await get(`RE#${release.id}`, 'RE');
    expect(
      await releases.exchangeExtrasInOrder(
        release.id,
        { set: { waitToken: 't1', waitKind: 'poll' } },
        { name: 'waitSeq', value: '1' },
      ),
    ).toEqual({});
    expect(await releases.exchangeExtras(release.id, { set: { wakePending: true } })).toEqual({
      waitToken: 't1',
      waitKind: 'poll',
      waitSeq: '1',
    });
    expect(await get(`RE#${release.id}`, 'RE')).toEqual(before);
    expect(await get(`RE#${release.id}`, 'RE#L')).toMatchObject({ waitToken: 't1', wakePending: true });
    expect((await releases.listActive()).find((a) => a.release.id === release.id)?.extras).toMatchObject({
      waitToken: 't1',
      wakePending: true,
    });
    await releases.applyChange({
      releaseId: release.id,
      expectState: 'initializing',
      toState: 'running',
      setExtras: { wakePending: false, generation: 1 },
    });
    expect(await get(`RE#${release.id}`, 'RE#L')).toMatchObject({ wakePending: false });
    expect(await get(`RE#${release.id}`, 'RE')).toMatchObject({ state: 'running', generation: 1 });
    expect((await get(`RE#${release.id}`, 'RE'))?.wakePending).toBeUndefined();
    // A latch write and another extra in one call would not be one atomic write any more.
    await expect(
      releases.exchangeExtras(release.id, { set: { waitToken: 't', generation: 2 } }),
    ).rejects.toThrow(/not both/);
  });

  it('moves a latch an earlier layout left on the release item at its first write, answering its values', async () => {
    const { release } = await newRelease(0);
    await doc.send(
      new UpdateCommand({
        TableName: tables.coordinator,
        Key: { pk: `RE#${release.id}`, sk: 'RE' },
        UpdateExpression: 'SET waitToken = :t, waitKind = :k',
        ExpressionAttributeValues: { ':t': 'old', ':k': 'staged' },
      }),
    );
    // Until then the reconciler sees the waiting token where the earlier code stored it.
    expect((await releases.listActive()).find((a) => a.release.id === release.id)?.extras).toMatchObject({
      waitToken: 'old',
      waitKind: 'staged',
    });
    expect(await releases.exchangeExtras(release.id, { set: { wakePending: true } })).toEqual({
      waitToken: 'old',
      waitKind: 'staged',
    });
    expect((await get(`RE#${release.id}`, 'RE'))?.waitToken).toBeUndefined();
    await releases.removeExtraIf(release.id, 'waitToken', 'old');
    expect((await releases.load(release.id))?.extras).toEqual({ wakePending: true });
  });

  it('leaves no latch item behind for a release that does not exist', async () => {
    expect(await releases.exchangeExtras('RE_ZZZZZZZY', { set: { wakePending: true } })).toBeNull();
    expect(await get('RE#RE_ZZZZZZZY', 'RE#L')).toBeUndefined();
  });
});

describe('ReleaseCreation.create', () => {
  // More tasks than one transaction holds (100 items), so the creation and every round take several.
  const LARGE = 150;
  let large: Awaited<ReturnType<typeof newRelease>>;
  /** The items of each TransactWriteItems the creation sent. */
  const parts: number[] = [];
  beforeAll(async () => {
    const counting = {
      send: (cmd: Parameters<typeof doc.send>[0]) => {
        const items = (cmd.input as { TransactItems?: unknown[] }).TransactItems;
        if (items) parts.push(items.length);
        return doc.send(cmd);
      },
    } as typeof doc;
    large = await newRelease(LARGE, new DynamoReleaseRepository(counting, tables));
  }, 120_000);

  it(`creates a release of ${LARGE} tasks in parts, and leaves it unmarked once every task is written`, async () => {
    expect(large.tasks).toHaveLength(LARGE);
    expect(parts.length).toBeGreaterThan(1);
    for (const n of parts) expect(n).toBeLessThanOrEqual(100);
    const loaded = await releases.load(large.release.id);
    expect(loaded?.tasks).toHaveLength(LARGE);
    expect(loaded?.extras).toEqual({});
    for (const t of large.tasks) expect((await releases.getTask(t.id))?.state).toBe('pending');
    const page = { limit: 1, offset: 0 };
    expect((await releases.listTasks({ releaseId: large.release.id }, page)).count).toBe(LARGE);
    expect((await events.list({ releaseId: large.release.id }, page)).count).toBe(0);
  });

  it(`moves all ${LARGE} tasks of a round, each with its event and counts, in transactions under 100 items`, async () => {
    const agg = large;
    const page = { limit: 1, offset: 0 };
    const runningBefore = (await releases.listTasks({ state: 'running' }, page)).count;
    const pendingBefore = (await releases.listTasks({ state: 'pending' }, page)).count;
    const eventsBefore = (await events.list({ releaseId: agg.release.id }, page)).count;
    const allBefore = (await events.list({}, page)).count;
    const deps = { releases, publisher: { publish: async () => {} } };
    await commit(
      deps,
      agg.release.id,
      agg.tasks.map((t) => taskPart(t, 'running', 5)),
      releaseMove(agg, 'running'),
    );
    const after = await releases.load(agg.release.id);
    expect(after?.release.state).toBe('running');
    expect(new Set(after?.tasks.map((t) => `${t.state}/${t.progress}`))).toEqual(new Set(['running/5']));
    expect((await releases.listTasks({ state: 'running' }, page)).count).toBe(runningBefore + LARGE);
    expect((await releases.listTasks({ state: 'pending' }, page)).count).toBe(pendingBefore - LARGE);
    expect((await events.list({ releaseId: agg.release.id }, page)).count).toBe(eventsBefore + LARGE + 1);
    expect((await events.list({}, page)).count).toBe(allBefore + LARGE + 1);
    const byTask = await releases.listTasks({ releaseId: agg.release.id, state: 'running' }, page);
    expect(byTask.count).toBe(LARGE);
    const one = agg.tasks[7];
    expect((await events.list({ taskId: one.id }, page)).count).toBe(1);
    expect((await events.list({ taskId: one.id, releaseId: agg.release.id }, page)).count).toBe(1);
    expect((await events.list({ taskServiceId: one.taskServiceId }, page)).count).toBe(1);
  });

  it('refuses a stale registry guard, so a deleted service never gets a task', async () => {
    const svc = await newService('doomed');
    const guard = await services.readGuard();
    expect(await services.delete(svc.id, await services.readGuard())).toBe('deleted');
    await expect(
      releases.create(
        { name: 'r', description: '', studies: [], version: '0.0.1', tags: [], author: 'a', isMajor: false },
        [svc],
        guard,
        () => [],
      ),
    ).rejects.toMatchObject({ failed: [{ kind: 'registry', id: 'registry' }] });
  });

  it('makes a delete retry when a release was created after its check', async () => {
    const svc = await newService('busy');
    const guard = await services.readGuard();
    await releases.create(
      { name: 'r', description: '', studies: [], version: '0.0.1', tags: [], author: 'a', isMajor: false },
      [svc],
      await services.readGuard(),
      () => [],
    );
    expect(await services.delete(svc.id, guard)).toBe('retry');
    const still = await doc.send(
      new GetCommand({ TableName: process.env.COORDINATOR_TABLE, Key: { pk: `TS#${svc.id}`, sk: 'TS' } }),
    );
    expect(still.Item).toBeDefined();
  });
});

describe('TaskReports.writeReport on the stream: the report that completes a phase', () => {
  const admin = { identity: null, isAdmin: true };

  /**
   * A release of `n` tasks, all running; then each task reports staged in turn. After each report, the records it
   * put on the table's stream (DynamoDB Local keeps streams as DynamoDB does) are read as PhaseWatch gets them:
   * which groups they completed, and whether the whole release was then complete.
   */
  async function reportAllStaged(n: number) {
    const agg = await newRelease(n);
    await commit(
      { releases, publisher: { publish: async () => {} } },
      agg.release.id,
      agg.tasks.map((t) => taskPart(t, 'running', 5)),
      releaseMove(agg, 'running'),
    );
    const stream = new TableStreamReader({
      endpoint: inject('ddbEndpoint'),
      tableName: process.env.COORDINATOR_TABLE as string,
    });
    await stream.start();
    const groups: number[] = [];
    const complete: boolean[] = [];
    try {
      for (const task of agg.tasks) {
        const target = await releases.reportTarget(task.id);
        if (!target) throw new Error(`task ${task.id} not found by id`);
        const running = { ...target.task, state: 'running' as const };
        const outcome = await releases.writeReport({
          target: { ...target, task: running },
          toState: 'staged',
          progress: 100,
          events: [taskStateEvent(running, 'running', 'staged')],
          phases: ['running'],
          actor: admin,
        });
        if (!outcome.written) throw new Error(`report of ${task.id} not written: ${outcome.why}`);
        const done = groupsCompleted(await stream.read(), PHASE_ENDS);
        expect(done.every((d) => d.releaseId === agg.release.id && d.state === 'staged')).toBe(true);
        groups.push(done.length);
        complete.push(done.length > 0 && (await releases.allTasksIn(agg.release.id, 'staged')));
      }
    } finally {
      stream.destroy();
    }
    return { groups, complete, groupCount: new Set(agg.tasks.map((t) => viewGroup(t.id))).size };
  }

  // A task alone in its view group completes that group with its own report: the release of one task service, and
  // often the last group of a small release.
  for (const n of [1, 2, 5, 12]) {
    it(`completes each group once and the release with the last of ${n} report(s)`, async () => {
      const { groups, complete, groupCount } = await reportAllStaged(n);
      expect(groups.reduce((a, b) => a + b, 0)).toBe(groupCount);
      expect(groups.at(-1)).toBe(1);
      expect(complete).toEqual([...Array(n - 1).fill(false), true]);
    });
  }
});

describe('TaskServiceRepository.credentialsOf', () => {
  it("reads several services' credentials in one go, as each one alone would, null for an unknown id", async () => {
    const [a, b] = await Promise.all([newService('cred-a'), newService('cred-b')]);
    const many = await services.credentialsOf([a.id, b.id, 'TS_UNKNOWN0']);
    expect([...many.keys()]).toEqual([a.id, b.id, 'TS_UNKNOWN0']);
    expect(many.get(a.id)).toEqual(await services.credentials(a.id));
    expect(many.get(b.id)).toEqual(await services.credentials(b.id));
    expect(many.get(a.id)).not.toBeNull();
    expect(many.get('TS_UNKNOWN0')).toBeNull();
    expect(await services.credentialsOf([])).toEqual(new Map());
  });
});
