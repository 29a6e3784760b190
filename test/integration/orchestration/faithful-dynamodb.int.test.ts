import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReleaseHarness, startReleaseHarness } from '#test/helpers/release-harness.js';
import { faithfulCounts } from '#test/helpers/tables.js';

/**
 * Whole releases on DynamoDB as it treats concurrency (DYNAMODB_FAITHFUL=conflicts,throttle: transactions that meet
 * one in flight are cancelled with TransactionConflict, a share of the requests to each partition key is throttled;
 * local/dynamodb-faithful.ts), at a small size of the 20 × 50 benchmark: 3 releases of 20 services whose callbacks
 * arrive together. Everything must still publish, every callback must end 200 for the service (a 409 or 503 with
 * Retry-After is sent again, as docs/task-service-api.md asks), every count must equal a recount of the items, and
 * every task's story must be told by its events exactly once.
 */
process.env.DYNAMODB_FAITHFUL = 'conflicts,throttle';
process.env.DYNAMODB_THROTTLE_SHARE = '0.05';

const RELEASES = 3;
const SERVICES = 20;

describe('callbacks under DynamoDB conflicts and throttling', () => {
  let h: ReleaseHarness;
  beforeAll(async () => {
    h = await startReleaseHarness({ ACTION_TIMEOUT_SECONDS: '10' });
  });
  afterAll(async () => {
    await h?.close();
  });

  it(`publishes ${RELEASES} releases of ${SERVICES} services; callbacks end 200, counts and events exact`, {
    timeout: 300_000,
  }, async () => {
    const services = await h.addServices(SERVICES, { stageMs: 300, publishMs: 300, retryAfterScale: 0.2 });
    const releases = await Promise.all(Array.from({ length: RELEASES }, () => h.createRelease()));
    const ids = releases.map((r) => r.item_id as string);
    await Promise.all(
      ids.map(async (id) => {
        const staged = await h.waitForState(id, ['staged', 'failed', 'canceled'], 45_000);
        if (staged.state !== 'staged') return;
        const published = await h.api.call('POST', `/releases/${id}/publish`);
        expect(published.status).toBe(200);
      }),
    );
    const done = await Promise.all(
      ids.map((id) => h.waitForState(id, ['published', 'failed', 'canceled'], 45_000)),
    );
    const why = await Promise.all(
      done
        .filter((r) => r.state !== 'published')
        .map(async (r) =>
          (await h.events(r.item_id)).filter((e) => e.event_type !== 'info').map((e) => e.message),
        ),
    );
    expect(
      done.map((r) => r.state),
      JSON.stringify(why),
    ).toEqual(ids.map(() => 'published'));

    // The proxy was in the way: it refused requests, which the code retried.
    const refused = await faithfulCounts();
    const total = (m: Record<string, number> = {}) => Object.values(m).reduce((a, b) => a + b, 0);
    expect(total(refused?.conflicts) + total(refused?.throttled)).toBeGreaterThan(0);

    // Every report ended 200 for the service that sent it (after retries where it was told to). The poll loop may
    // have seen the last task published before that task's own report was answered: wait for the answers.
    const answered = () => services.flatMap((s) => s.fake.callbacks);
    for (
      const deadline = Date.now() + 30_000;
      answered().length < RELEASES * SERVICES * 2 && Date.now() < deadline;
    )
      await new Promise((r) => setTimeout(r, 50));
    const reports = answered();
    expect(reports).toHaveLength(RELEASES * SERVICES * 2);
    // One answer other than 200 is right: a last `published` report (first sent, or sent again after Retry-After)
    // that the poll loop overtook: its get_status saw the task published and ended the release while the report
    // was still retrying inside the coordinator. The release is over, so it is a final 409 (every report about a
    // finished release is, docs/api.md), and the task already holds what it says. Anything else fails.
    // The same holds for a last `staged` report that the poll overtook: get_status saw the task staged, the release
    // was published meanwhile, and the report arrives when the task is already publishing.
    const overtaken = (c: (typeof reports)[number]) =>
      c.status === 409 &&
      ((c.state === 'published' && /belongs to a release that is published/.test(c.error ?? '')) ||
        (c.state === 'staged' && /may not change from publishing to staged/.test(c.error ?? '')));
    expect(reports.filter((c) => c.status !== 200 && !overtaken(c))).toEqual([]);
    const finalStates = new Map(
      (await Promise.all(ids.map((id) => h.release(id)))).flatMap((r) =>
        r.tasks.map((t: { item_id: string; state: string }) => [t.item_id, t.state] as const),
      ),
    );
    for (const c of reports.filter(overtaken)) expect(finalStates.get(c.taskId)).toBe('published');

    // The counts equal a recount of the items.
    const items = await scanAll();
    const tasks = items.filter((i) => String(i.pk).startsWith('RE#') && String(i.sk).startsWith('TA#'));
    const events = items.filter((i) => String(i.pk).startsWith('EV#') && i.sk === 'EV');
    const count = async (path: string) => (await h.api.call('GET', path)).body.count as number;
    expect(tasks).toHaveLength(RELEASES * SERVICES);
    expect(await count('/tasks?limit=1')).toBe(tasks.length);
    for (const state of ['pending', 'running', 'staged', 'publishing', 'published'])
      expect(await count(`/tasks?state=${state}&limit=1`)).toBe(
        tasks.filter((t) => t.state === state).length,
      );
    expect(await count('/events?limit=1')).toBe(events.length);
    for (const id of ids)
      expect(await count(`/events?release=${id}&limit=1`)).toBe(
        events.filter((e) => e.releaseId === id).length,
      );
    for (const s of services.slice(0, 3))
      expect(await count(`/events?task_service=${s.id}&limit=1`)).toBe(
        events.filter((e) => e.taskServiceId === s.id).length,
      );
    expect(await count('/releases?state=published&limit=1')).toBe(RELEASES);

    // Each task's events tell its way from pending to published once: none lost, none written twice.
    const moves = /^task (\S+) changed from (\S+) to (\S+)/;
    for (const task of tasks) {
      const mine = events
        .filter((e) => e.taskId === task.id && moves.test(String(e.message)))
        .sort((a, b) => String(a.createdAt).localeCompare(String(b.createdAt)));
      const path = ['pending'];
      for (const e of mine) {
        const [, , from, to] = moves.exec(String(e.message)) ?? [];
        expect(from).toBe(path.at(-1));
        path.push(to);
      }
      expect(path.at(-1)).toBe('published');
      expect(new Set(path).size).toBe(path.length);
    }
    for (const id of ids)
      expect(
        events.filter(
          (e) =>
            e.releaseId === id &&
            !e.taskId &&
            String(e.message).endsWith('changed from publishing to published'),
        ),
      ).toHaveLength(1);
  });

  async function scanAll(): Promise<Record<string, unknown>[]> {
    const out: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await h.api.doc.send(
        new ScanCommand({
          TableName: h.api.tables.COORDINATOR_TABLE,
          ExclusiveStartKey: start,
          ConsistentRead: true,
        }),
      );
      out.push(...((page.Items ?? []) as Record<string, unknown>[]));
      start = page.LastEvaluatedKey;
    } while (start);
    return out;
  }
});
