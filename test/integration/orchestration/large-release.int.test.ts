import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { DynamoTaskServiceRepository } from '#functions/adapters/dynamodb/task-services.js';
import { releaseCreatedEvent } from '#functions/coordinator/event-messages.js';
import { startStepFunctions } from '#local/step-functions/endpoint.js';
import { checkCounts, wrongCounts } from '#test/helpers/counts.js';
import { type HoldProxy, startHoldProxy } from '#test/helpers/dynamodb-hold.js';
import { type ReleaseHarness, STUDIES, startReleaseHarness } from '#test/helpers/release-harness.js';

/**
 * A release of more task services than one DynamoDB transaction holds (100 items): it is created in parts, and each
 * round moves its tasks in parts, each task with its event. It stages and publishes like any other (work takes no
 * time here), and when a creation or a round stops between two parts (the process dies after the first: the store
 * throws there, or a proxy in front of DynamoDB holds the second part while the executions are dropped), the
 * execution the reconciler starts finishes what was begun: no task is lost or moved twice, and every count is what
 * paging finds.
 */
const SERVICES = 150;
let h: ReleaseHarness;
let hold: HoldProxy;
let tables: { coordinator: string; studies: string };

beforeAll(async () => {
  hold = await startHoldProxy(inject('ddbEndpoint'));
  h = await startReleaseHarness({ ACTION_TIMEOUT_SECONDS: '10', AWS_ENDPOINT_URL_DYNAMODB: hold.endpoint });
  tables = { coordinator: h.api.tables.COORDINATOR_TABLE, studies: h.api.tables.STUDIES_TABLE };
  await h.addServices(SERVICES, { stageMs: 0, publishMs: 0 });
}, 300_000);
afterAll(async () => {
  await h?.close();
  await hold?.close();
});

/** A transaction item that moves a task's state (a round's, or a callback's). */
const movesTask = (i: { Update?: any }) =>
  String(i.Update?.Key?.sk?.S ?? '').startsWith('TA#') &&
  String(i.Update?.UpdateExpression).includes('#state');

async function until(done: () => boolean, what: string, ms = 120_000): Promise<void> {
  for (const end = Date.now() + ms; !done(); await new Promise((r) => setTimeout(r, 20)))
    if (Date.now() > end) throw new Error(`waited ${ms} ms for ${what}`);
}

/** A document client that dies, as a crashed process would, before the transaction after the first `parts`. */
function dyingAfter(parts: number): DynamoDBDocumentClient {
  let sent = 0;
  return {
    send: (cmd: Parameters<DynamoDBDocumentClient['send']>[0]) => {
      if ((cmd.input as { TransactItems?: unknown[] }).TransactItems && sent++ >= parts)
        return Promise.reject(new Error('the process died here'));
      return h.api.doc.send(cmd);
    },
  } as DynamoDBDocumentClient;
}

const get = async (path: string) => (await h.api.call('GET', path)).body;

/** How many events say each task moved out of `from` (or into `to`): one per task, or a move was lost or doubled. */
async function movesOf(releaseId: string, from?: string, to?: string): Promise<Map<string, number>> {
  const all: any[] = [];
  for (let page = await get(`/events?release=${releaseId}&limit=100`); ; ) {
    all.push(...page.results);
    if (!page.next) break;
    const next = new URL(page.next);
    page = await get(`${next.pathname}${next.search}`);
  }
  const moves = new Map<string, number>();
  for (const e of all)
    if (
      e.task &&
      (from === undefined || String(e.message).includes(` changed from ${from} to `)) &&
      (to === undefined || String(e.message).endsWith(` to ${to}`))
    ) {
      const task = String(e.task).split('/').pop() as string;
      moves.set(task, (moves.get(task) ?? 0) + 1);
    }
  return moves;
}

describe(`a release of ${SERVICES} task services`, () => {
  it('is created, staged and published, and every count is what paging finds', async () => {
    const created = await h.createRelease();
    expect(created.tasks).toHaveLength(SERVICES);
    const staged = await h.waitForState(created.item_id, ['staged', 'failed', 'canceled'], 240_000);
    expect(staged.state).toBe('staged');
    expect((await h.api.call('POST', `/releases/${created.item_id}/publish`)).status).toBe(200);
    const done = await h.waitForState(created.item_id, ['published', 'failed', 'canceled'], 240_000);
    expect(done.state).toBe('published');
    expect(new Set(done.tasks.map((t: any) => t.state))).toEqual(new Set(['published']));
    const published = await movesOf(created.item_id, undefined, 'published');
    expect(published.size).toBe(SERVICES);
    expect(new Set(published.values())).toEqual(new Set([1]));
    expect(wrongCounts(await checkCounts(get))).toEqual([]);
  }, 600_000);

  it('whose creation stopped after its first part is completed by the execution the reconciler starts', async () => {
    const services = (await new DynamoTaskServiceRepository(h.api.doc, tables).all()).filter(
      (s) => s.enabled,
    );
    expect(services).toHaveLength(SERVICES);
    const guard = await new DynamoTaskServiceRepository(h.api.doc, tables).readGuard();
    const interrupted = new DynamoReleaseRepository(dyingAfter(1), tables);
    let releaseId = '';
    await expect(
      interrupted.create(
        {
          name: 'stopped between two parts',
          description: '',
          studies: STUDIES,
          version: '0.0.0',
          tags: [],
          author: 'tests',
          isMajor: false,
        },
        services,
        guard,
        (release, tasks) => {
          releaseId = release.id;
          return [releaseCreatedEvent(release, tasks.length)];
        },
      ),
    ).rejects.toThrow('the process died here');
    // Its view names every task, but not every task has its item yet, and nothing drives it.
    const half = await h.release(releaseId);
    expect(half.tasks).toHaveLength(SERVICES);
    const items = await Promise.all(half.tasks.map((t: any) => h.api.call('GET', `/tasks/${t.item_id}`)));
    expect(items.filter((r) => r.status === 404).length).toBeGreaterThan(0);
    expect(await h.execution(releaseId)).toBeUndefined();
    const report = await h.reconcile();
    expect(report.started.map((s) => s.releaseId)).toContain(releaseId);
    const staged = await h.waitForState(releaseId, ['staged', 'failed', 'canceled'], 240_000);
    expect(staged.state).toBe('staged');
    for (const t of staged.tasks) expect((await h.api.call('GET', `/tasks/${t.item_id}`)).status).toBe(200);
    const stagedMoves = await movesOf(releaseId, undefined, 'staged');
    expect(stagedMoves.size).toBe(SERVICES);
    expect(new Set(stagedMoves.values())).toEqual(new Set([1]));
    expect(wrongCounts(await checkCounts(get))).toEqual([]);
  }, 600_000);

  it('whose round stopped between two of its parts is finished by the next execution, each task moved once', async () => {
    // The start round moves all 150 tasks in several transactions; the process dies before the second.
    hold.arm((body) => (body.TransactItems ?? []).filter(movesTask).length >= 5, 1);
    const created = await h.createRelease();
    const id = created.item_id;
    await until(() => hold.held() > 0, 'the round to reach its second part');
    const half = await h.release(id);
    expect(half.state).toBe('initializing');
    const moved = half.tasks.filter((t: any) => t.state !== 'pending').length;
    expect(moved).toBeGreaterThan(0);
    expect(moved).toBeLessThan(SERVICES);
    // The process dies: its executions with it, and the write it was waiting on never happens.
    const port = Number(new URL(h.sfn.endpoint).port);
    await h.sfn.stop();
    hold.fail();
    h.sfn = await startStepFunctions({ port, waitMs: (s, sec) => (s === 'PollWait' ? 250 : sec * 1000) });
    // Started again, the reconciler gives the release an execution; its steps plan from what is stored.
    expect((await h.reconcile()).started.map((s) => s.releaseId)).toContain(id);
    const staged = await h.waitForState(id, ['staged', 'failed', 'canceled'], 240_000);
    expect(staged.state).toBe('staged');
    const started = await movesOf(id, 'pending');
    expect(started.size).toBe(SERVICES);
    expect(new Set(started.values())).toEqual(new Set([1]));
    expect(wrongCounts(await checkCounts(get))).toEqual([]);
  }, 600_000);
});
