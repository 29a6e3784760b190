/**
 * `npm run bench:scale`: do list requests cost what their page costs, whatever the table holds?
 *
 * One local stack (`tsx bin/local.ts`, DynamoDB Local on disk). The table is seeded in two steps, through direct
 * DynamoDB writes (BatchWriteItem, several in flight) of items built by the repositories' own item builders, with
 * the counters the API would have moved:
 *   small: 10 task services, 10 releases of 10 tasks, 100 events;
 *   large: grown in place to 500 task services, 10,000 releases (100,000 tasks), 100,000 events.
 * After each step the stack restarts on its data (see `settle`), then the same six requests are measured with
 * autocannon (32 connections):
 *   GET /events?limit=10, /events?release=<id>, /tasks?task_service=<id>, /releases?limit=10,
 *   /releases?state=staged, and the page reached by following `next` 50 times (/events?limit=2).
 * The release and the task service measured are seeded in the first step, so both steps ask for the same thing.
 * Items read per request come from the repository calls behind each request, run in this process on a DocumentClient
 * that counts what DynamoDB reports (bench/lib/read-meter.ts). Target: large / small p50 and p99 <= 1.5 for each.
 *
 * Settings: BENCH_CONNECTIONS (32), BENCH_SECONDS (30), BENCH_WARMUP_SECONDS (3), BENCH_WRITE_DOCS (true),
 * BENCH_SCALE_RELEASES (10000), BENCH_SCALE_EVENTS (100000), BENCH_SCALE_SERVICES (500).
 */
import { resolve } from 'node:path';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { C, counterKey, K, TASK_COUNTS, type Tables } from '#functions/adapters/dynamodb/common.js';
import { DynamoEventRepository, eventCounters, eventItem } from '#functions/adapters/dynamodb/events.js';
import { FoldTally, putAll, setServiceTaskCounts, Tally } from '#functions/adapters/dynamodb/migrate.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import * as releaseItems from '#functions/adapters/dynamodb/releases/items.js';
import { DynamoTaskServiceRepository } from '#functions/adapters/dynamodb/task-services.js';
import type {
  CoordinatorEvent,
  Release,
  ReleaseState,
  Task,
  TaskService,
} from '#functions/coordinator/model.js';
import { decodeCursor, type Page } from '#functions/shared/list.js';
import { ROOT } from '#local/config.js';
import { tableEnv } from '#local/dynamodb-local.js';
import type { TaskState } from '#packages/task-service/src/protocol.js';
import { httpLoad, type LoadResult } from './lib/load.js';
import { meteredDocumentClient, type Reads } from './lib/read-meter.js';
import { fmt, machineInfo, writeSection } from './lib/report.js';
import { benchStack, type StackEndpoints, waitForQuiet } from './lib/stack.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const WRITE_DOCS = process.env.BENCH_WRITE_DOCS !== 'false';
const LARGE = {
  services: Number(process.env.BENCH_SCALE_SERVICES ?? 500),
  releases: Number(process.env.BENCH_SCALE_RELEASES ?? 10_000),
  events: Number(process.env.BENCH_SCALE_EVENTS ?? 100_000),
};
const SMALL = { services: 10, releases: 10, events: 100 };
const TASKS_PER_RELEASE = 10;
const DEEP_PAGES = 50;

const say = (line: string) => process.stdout.write(`${line}\n`);

/** Seeded history: one release every few seconds from 2020 on, so sort keys are unique and ordered. */
const T0 = Date.parse('2020-01-01T00:00:00Z');
const at = (ms: number) => `${new Date(T0 + ms).toISOString().slice(0, -1)}000Z`;
const seededId = (prefix: string, n: number) => `${prefix}_${n.toString(36).toUpperCase().padStart(8, '0')}`;

/**
 * Release states of the seeded history: the small table's releases are all staged (so ?state=staged has a full page
 * in both tables), the rest mostly published, a fifth staged.
 */
function stateOf(n: number): ReleaseState {
  if (n < SMALL.releases) return 'staged';
  const r = n % 10;
  return r < 6 ? 'published' : r < 8 ? 'staged' : r < 9 ? 'canceled' : 'failed';
}
const taskStateFor: Record<string, TaskState> = {
  published: 'published',
  staged: 'staged',
  canceled: 'canceled',
  failed: 'failed',
};

interface Seeder {
  doc: DynamoDBDocumentClient;
  tables: Tables;
  studies: string[];
  services: number;
  releases: number;
  events: number;
  serviceTasks: Map<string, number>;
}

/**
 * Writes task services, releases (with their tasks and study members) and events from `from` to the sizes given,
 * plus the counts they move; returns the number of items written.
 */
async function seed(
  s: Seeder,
  from: { services: number; releases: number; events: number },
): Promise<number> {
  const table = s.tables.coordinator;
  const servicesRepo = new DynamoTaskServiceRepository(s.doc, s.tables);
  const tally = new Tally();
  const folds = new FoldTally();
  const items: Record<string, unknown>[] = [];
  const services: TaskService[] = [];
  for (let i = 0; i < s.services; i++)
    services.push({
      id: seededId('TS', i),
      name: `service ${i}`,
      quarantine: null,
      description: 'seeded',
      author: 'bench',
      url: `http://127.0.0.1:9/${i}`,
      enabled: true,
      healthStatus: 'ok',
      lastOkStatus: 0,
      clientId: null,
      createdAt: at(i),
    });
  for (const svc of services.slice(from.services)) {
    items.push(servicesRepo.item(svc));
    tally.add(C.taskServices);
    tally.add(C.servicesEnabled(true));
  }
  const releaseTasks = new Map<string, Task[]>();
  const releases: Release[] = [];
  for (let n = from.releases; n < s.releases; n++) {
    const state = stateOf(n);
    const createdAt = at(1_000_000 + n * 5_000);
    const release: Release = {
      id: seededId('RE', n),
      name: `release ${n}`,
      description: 'seeded',
      state,
      studies: [s.studies[n % s.studies.length]],
      version: `0.${Math.floor(n / 100)}.${n % 100}`,
      createdAt,
      tags: [],
      author: 'bench',
      isMajor: false,
    };
    const tasks: Task[] = Array.from({ length: TASKS_PER_RELEASE }, (_, j) => {
      // Release n uses services n*10 .. n*10+9 (mod the services that exist when it is seeded).
      const svc = services[(n * TASKS_PER_RELEASE + j) % (n < SMALL.releases ? SMALL.services : s.services)];
      return {
        id: seededId('TA', n * TASKS_PER_RELEASE + j),
        releaseId: release.id,
        taskServiceId: svc.id,
        serviceName: svc.name,
        state: taskStateFor[state],
        progress: 100,
        createdAt,
      };
    });
    releases.push(release);
    releaseTasks.set(release.id, tasks);
    items.push(
      releaseItems.releaseItem(release),
      releaseItems.releaseViewItem(release.id, tasks),
      ...releaseItems.viewShardItems(release, tasks),
    );
    const sizes = releaseItems.groupSizes(tasks);
    for (const t of tasks) {
      items.push(releaseItems.taskItem(t, sizes.get(t.id)));
      tally.add(C.tasks);
      tally.add(C.tasksInState(t.state));
      s.serviceTasks.set(t.taskServiceId, (s.serviceTasks.get(t.taskServiceId) ?? 0) + 1);
    }
    for (const studyId of release.studies) {
      items.push(releaseItems.studyMemberItem(release, studyId));
      tally.add(C.releasesOfStudy(studyId));
    }
    tally.add(C.releases);
    tally.add(C.releasesInState(state));
  }
  // Events: ten per release, spread over its tasks (release-wide ones name no task).
  const all = s.releases;
  for (let k = from.events; k < s.events; k++) {
    const n = Math.floor((k / s.events) * all);
    const releaseId = seededId('RE', n);
    const tasks = releaseTasks.get(releaseId);
    const j = k % (TASKS_PER_RELEASE + 1);
    const task = tasks && j < TASKS_PER_RELEASE ? tasks[j] : undefined;
    const svcOfTask = task?.taskServiceId ?? null;
    const e: CoordinatorEvent = {
      id: seededId('EV', k),
      eventType: 'info',
      message: task ? `task ${task.id} changed from running to staged` : `release ${releaseId} changed`,
      releaseId,
      taskId: task?.id ?? null,
      taskServiceId: svcOfTask,
      studyId: null,
      source: 'coordinator',
      createdAt: at(1_000_000 + n * 5_000 + 10 + (k % 1000)),
    };
    items.push(eventItem(e));
    for (const c of eventCounters(e)) tally.add(c);
    folds.add(e);
  }
  await putAll(s.doc, table, items, 8);
  await addCounts(s.doc, table, tally);
  await addFolds(s.doc, table, folds);
  await setServiceTaskCounts(s.doc, table, s.serviceTasks);
  return items.length;
}

/** ADDs, 8 at a time: `[key, attribute, delta]`. */
async function addAll(
  doc: DynamoDBDocumentClient,
  table: string,
  adds: [Record<string, unknown>, string, number][],
): Promise<void> {
  const { UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < adds.length) {
        const [Key, attr, n] = adds[next++];
        await doc.send(
          new UpdateCommand({
            TableName: table,
            Key,
            UpdateExpression: 'ADD #a :n',
            ExpressionAttributeNames: { '#a': attr },
            ExpressionAttributeValues: { ':n': n },
          }),
        );
      }
    }),
  );
}

/** Adds the tallied counts to what the counters hold (shard 0), so the second step grows the first one's counts. */
function addCounts(doc: DynamoDBDocumentClient, table: string, tally: Tally): Promise<void> {
  return addAll(
    doc,
    table,
    [...tally.counts.values()].map(({ counter, n }) => [counterKey(counter.name, 0), counter.attr ?? 'n', n]),
  );
}

/** Adds the counts that ride on items (a task's events, a release's) to those items. */
function addFolds(doc: DynamoDBDocumentClient, table: string, folds: FoldTally): Promise<void> {
  return addAll(doc, table, [
    ...[...folds.tasks.values()].flatMap(({ releaseId, taskId, events, only }) =>
      Object.entries({ [TASK_COUNTS.events]: events, [TASK_COUNTS.onlyEvents]: only })
        .filter(([, n]) => n > 0)
        .map(([attr, n]): [Record<string, unknown>, string, number] => [K.task(releaseId, taskId), attr, n]),
    ),
    ...[...folds.releases].map(([releaseId, n]): [Record<string, unknown>, string, number] => [
      K.releaseViewShard(releaseId, 0),
      releaseItems.SHARD.events,
      n,
    ]),
  ]);
}

async function adminToken(stack: StackEndpoints): Promise<string> {
  const res = await fetch(`${stack.idp}/dev/tokens`, {
    method: 'POST',
    body: JSON.stringify({ sub: 'bench', roles: ['admin'], expires_in: 7200 }),
  });
  if (res.status !== 200) throw new Error(`POST /dev/tokens answered ${res.status}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

interface Kind {
  name: string;
  /** The path measured (for the deep page: found by following `next`). */
  path: (stack: StackEndpoints, token: string) => Promise<string>;
  /** The same request's DynamoDB work, through the repositories (for items read). */
  reads: (
    deps: { events: DynamoEventRepository; releases: DynamoReleaseRepository },
    path: string,
  ) => Promise<unknown>;
}

const pageOfPath = (path: string): Page => {
  const q = new URL(path, 'http://x').searchParams;
  const cursor = q.get('cursor');
  return {
    limit: Number(q.get('limit') ?? 10),
    offset: Number(q.get('offset') ?? 0),
    ...(cursor ? { cursor: decodeCursor(cursor) ?? undefined } : {}),
  };
};

const TARGET_RELEASE = seededId('RE', 3);
const TARGET_SERVICE = seededId('TS', 4);

const KINDS: Kind[] = [
  {
    name: 'GET /events?limit=10',
    path: async () => '/events?limit=10',
    reads: (d, p) => d.events.list({}, pageOfPath(p)),
  },
  {
    name: 'GET /events?release=<id>',
    path: async () => `/events?release=${TARGET_RELEASE}`,
    reads: (d, p) => d.events.list({ releaseId: TARGET_RELEASE }, pageOfPath(p)),
  },
  {
    name: 'GET /tasks?task_service=<id>',
    path: async () => `/tasks?task_service=${TARGET_SERVICE}`,
    reads: (d, p) => d.releases.listTasks({ taskServiceId: TARGET_SERVICE }, pageOfPath(p)),
  },
  {
    name: 'GET /releases?limit=10',
    path: async () => '/releases?limit=10',
    reads: (d, p) => d.releases.list({}, pageOfPath(p)),
  },
  {
    name: 'GET /releases?state=staged',
    path: async () => '/releases?state=staged',
    reads: (d, p) => d.releases.list({ state: 'staged' }, pageOfPath(p)),
  },
  {
    name: `page ${DEEP_PAGES} by following next (/events?limit=2)`,
    path: async (stack, token) => {
      let path = '/events?limit=2';
      for (let i = 1; i < DEEP_PAGES; i++) {
        const res = await fetch(`${stack.coordinator}${path}`, {
          headers: { Authorization: `Bearer ${token}` },
        });
        const body = (await res.json()) as { next: string | null };
        if (!body.next) throw new Error(`no next link after ${i} pages`);
        path = body.next.slice(stack.coordinator.length);
      }
      return path;
    },
    reads: (d, p) => d.events.list({}, pageOfPath(p)),
  },
];

interface Measured {
  load: LoadResult;
  reads: Reads;
  count: number;
}

async function measure(
  stack: StackEndpoints,
  token: string,
  deps: Parameters<Kind['reads']>[0],
  meter: ReturnType<typeof meteredDocumentClient>,
): Promise<Measured[]> {
  const out: Measured[] = [];
  for (const kind of KINDS) {
    const path = await kind.path(stack, token);
    const first = await fetch(`${stack.coordinator}${path}`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    const body = (await first.json()) as { count: number; results: unknown[] };
    if (first.status !== 200) throw new Error(`${kind.name}: ${first.status} ${JSON.stringify(body)}`);
    const { reads } = await meter.measure(() => kind.reads(deps, path));
    const opts = {
      url: `${stack.coordinator}${path}`,
      headers: { Authorization: `Bearer ${token}` },
      connections: CONNECTIONS,
      seconds: SECONDS,
    };
    if (WARMUP > 0) await httpLoad({ ...opts, seconds: WARMUP });
    const load = await httpLoad(opts);
    say(
      `  ${kind.name}: ${fmt(load.rps)} req/s, p50 ${load.p50} ms, p99 ${load.p99} ms, failures ${load.failures}; ` +
        `count ${body.count}, ${body.results.length} results; ${reads.items} items read in ${reads.calls} calls`,
    );
    out.push({ load, reads, count: body.count });
  }
  return out;
}

async function main() {
  say('Starting the local stack...');
  // No schedule may touch the seeded history while it is measured.
  const stack = await benchStack({
    HEALTH_INTERVAL_SECONDS: '86400',
    RECONCILE_SECONDS: '86400',
    STUDY_SYNC_SECONDS: '86400',
  });
  const names = tableEnv(process.env.TABLE_PREFIX ?? 'local');
  const tables = { coordinator: names.COORDINATOR_TABLE, studies: names.STUDIES_TABLE };
  let meter = meteredDocumentClient(stack.dynamodb);
  const quietWaits: number[] = [];
  const depsOf = (m: typeof meter) => ({
    events: new DynamoEventRepository(m.doc, tables),
    releases: new DynamoReleaseRepository(m.doc, tables),
  });
  /**
   * Right after a bulk load of 230,000 items DynamoDB Local stalls now and then for up to about 300 ms (raw GetItem,
   * Query and BatchGetItem at 32 in flight: max 268-323 ms, against 42-120 ms on the small table), for minutes;
   * started again on the same files, the same calls on the large table top out at 39-117 ms, as on the small one.
   * A table in service is not measured seconds after a bulk import, so each table is measured by a stack started
   * on it, the small one too.
   */
  const settle = async () => {
    meter.doc.destroy();
    await stack.restart();
    // The restarted stack's reconciler resumes every seeded release that is not terminal (2,008 staged ones in the
    // large table, about 40 s of full CPU here): measure after it.
    const waited = await waitForQuiet();
    say(`  quiet after ${fmt(waited, 0)} s`);
    quietWaits.push(waited);
    meter = meteredDocumentClient(stack.dynamodb);
    return { token: await adminToken(stack), deps: depsOf(meter) };
  };
  try {
    const firstToken = await adminToken(stack);
    const studies = (await (
      await fetch(`${stack.coordinator}/studies?limit=100`, {
        headers: { Authorization: `Bearer ${firstToken}` },
      })
    ).json()) as { results: { item_id: string }[] };
    if (!studies.results.length) throw new Error('no studies: is the study sync working?');
    const seeder: Seeder = {
      doc: meter.doc,
      tables,
      studies: studies.results.map((r) => r.item_id),
      ...SMALL,
      serviceTasks: new Map(),
    };

    say('Seeding the small table...');
    let t = performance.now();
    const smallItems = await seed(seeder, { services: 0, releases: 0, events: 0 });
    const smallSeed = (performance.now() - t) / 1000;
    say(`  ${fmt(smallItems)} items in ${fmt(smallSeed, 1)} s`);
    say('Restarting the stack on it...');
    let ready = await settle();
    say(`Measuring the small table (${CONNECTIONS} connections, ${SECONDS} s each after ${WARMUP} s)...`);
    const small = await measure(stack, ready.token, ready.deps, meter);

    say('Growing it to the large table...');
    t = performance.now();
    Object.assign(seeder, LARGE, { doc: meter.doc });
    const largeItems = await seed(seeder, SMALL);
    const largeSeed = (performance.now() - t) / 1000;
    say(`  ${fmt(largeItems)} items in ${fmt(largeSeed, 1)} s (${fmt(largeItems / largeSeed)} items/s)`);
    say('Restarting the stack on it...');
    ready = await settle();
    say('Measuring the large table...');
    const large = await measure(stack, ready.token, ready.deps, meter);

    const ratio = (a: number, b: number) => (b > 0 ? a / b : a > 0 ? Number.POSITIVE_INFINITY : 1);
    let allMet = true;
    const rows = KINDS.map((kind, i) => {
      const s = small[i];
      const l = large[i];
      const r50 = ratio(l.load.p50, s.load.p50);
      const r99 = ratio(l.load.p99, s.load.p99);
      const met = r50 <= 1.5 && r99 <= 1.5 && s.load.failures === 0 && l.load.failures === 0;
      allMet &&= met;
      return (
        `| ${kind.name} | ${fmt(s.count)} / ${fmt(l.count)} | ${fmt(s.load.rps)} / ${fmt(l.load.rps)} | ` +
        `${s.load.p50} / ${l.load.p50} | ${s.load.p99} / ${l.load.p99} | ${fmt(r50, 2)} / ${fmt(r99, 2)} | ` +
        `${s.reads.items} / ${l.reads.items} (${s.reads.calls} / ${l.reads.calls} calls) | ${met ? 'yes' : '**no**'} |`
      );
    });
    const section = [
      '## Scale: list requests on a small and a large table (`npm run bench:scale`)',
      '',
      machineInfo(),
      '',
      'One local stack (`tsx bin/local.ts`, DynamoDB Local on disk, -Xmx256m; schedules off). The table is seeded through',
      'direct BatchWriteItem calls (8 in flight) of items built by the repositories’ own item builders, with the counts',
      'the API would have moved, the stack is restarted on it and it is measured; then grown in place, restarted and measured again',
      '(right after a bulk load DynamoDB Local stalls now and then for up to ~300 ms; see bench/scale.ts), each time once',
      `the machine is quiet (the restarted stack first resumes the seeded releases that are not terminal; waited ${quietWaits.map((w) => `${fmt(w, 0)} s`).join(' and ')}).`,
      `Small: ${SMALL.services} task services,`,
      `${SMALL.releases} releases of ${TASKS_PER_RELEASE} tasks, ${SMALL.events} events. Large: ${fmt(LARGE.services)} task services, ${fmt(LARGE.releases)} releases`,
      `(${fmt(LARGE.releases * TASKS_PER_RELEASE)} tasks), ${fmt(LARGE.events)} events. Seeding took ${fmt(smallSeed, 1)} s for the small table (${fmt(smallItems)} items) and`,
      `${fmt(largeSeed, 1)} s to grow it (${fmt(largeItems)} items, ${fmt(largeItems / largeSeed)} items/s). autocannon, ${CONNECTIONS} connections, ${SECONDS} s per request after`,
      `a ${WARMUP} s warm-up. Items read: the same request’s repository calls run once in the benchmark process on a`,
      'DocumentClient that adds up ScannedCount and returned items (DynamoDB Local reports no consumed capacity for',
      'reads of a GSI).',
      '',
      '| request | count (small / large) | req/s | p50 ms | p99 ms | large/small p50 / p99 | items read per request | ratio <= 1.5 |',
      '|---|---:|---:|---:|---:|---:|---:|---|',
      ...rows,
      '',
      `All ratios within 1.5: ${allMet ? 'yes' : '**no**'}. autocannon reports latencies in whole milliseconds, so a`,
      'p50 of a few ms moves its ratio by steps of 1 ms.',
    ].join('\n');
    say('');
    say(section);
    if (WRITE_DOCS) {
      writeSection(resolve(ROOT, 'docs/benchmarks.md'), 'bench:scale', section);
      say('\nWritten to docs/benchmarks.md');
    }
  } catch (err) {
    say(`\nThe stack's last output:\n${stack.tail()}`);
    throw err;
  } finally {
    meter.doc.destroy();
    await stack.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`bench:scale failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
