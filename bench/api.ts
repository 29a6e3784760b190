/**
 * `npm run bench:api`: the coordinator API on the local stack against the raw DynamoDB Local ceiling, measured in
 * the same run on the same JVM (method: docs/benchmarks.md, How the ceilings are measured).
 *
 *   GET  /releases/<id>        a release with 10 tasks and 2 notes   vs a raw Query@32 of the same item collection
 *                                                                    (release, tasks, notes)   target >= 80%, p99 <= 40 ms
 *   GET  /releases?limit=10    a full page                           vs GetItem@32 (and Query@32, for reference)
 *                                                                    target >= 40%
 *   POST /events               one event (with a release reference)  vs TransactWrite 2 Puts@32   target >= 80%
 *
 * A benchmark, not a test: it prints a markdown table and writes it into docs/benchmarks.md. Settings:
 * BENCH_CONNECTIONS (32), BENCH_SECONDS (10), BENCH_WARMUP_SECONDS (3 for HTTP, 5 for the raw loops), BENCH_WRITE_DOCS (true); BENCH_COORDINATOR_URL / BENCH_IDP_URL / BENCH_DYNAMODB_ENDPOINT to drive a
 * running stack instead of starting one.
 */
import { resolve } from 'node:path';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { K } from '#functions/adapters/dynamodb/common.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { ROOT } from '#local/config.js';
import { tableEnv } from '#local/dynamodb-local.js';
import { startFakeFleet } from '#test/helpers/fake-task-service/index.js';
import {
  benchDocumentClient,
  type CeilingOp,
  DdbCeiling,
  type LoopResult,
  loopOf,
} from './lib/ddb-ceiling.js';
import { httpLoad, type LoadResult } from './lib/load.js';
import { fmt, machineInfo, writeSection } from './lib/report.js';
import { benchStack, type StackEndpoints } from './lib/stack.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const HTTP_WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const LOOP_WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 5);
const WRITE_DOCS = process.env.BENCH_WRITE_DOCS !== 'false';
const TASKS = 10;
const NOTES = 2;
const RELEASES = 10;

const say = (line: string) => process.stdout.write(`${line}\n`);

async function api(stack: StackEndpoints, token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${stack.coordinator}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

async function adminToken(stack: StackEndpoints): Promise<string> {
  const res = await fetch(`${stack.idp}/dev/tokens`, {
    method: 'POST',
    body: JSON.stringify({ sub: 'bench', roles: ['admin'], expires_in: 3600 }),
  });
  if (res.status !== 200) throw new Error(`POST /dev/tokens answered ${res.status}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** 10 task services, 10 releases over the sample studies (10 tasks each), 2 notes on the measured release. */
async function seed(stack: StackEndpoints, token: string, serviceUrls: string[]) {
  for (const [i, url] of serviceUrls.entries())
    await api(stack, token, 'POST', '/task-services', {
      name: `bench-service-${i}`,
      description: 'benchmark fake',
      author: 'bench',
      url,
    });
  const studies = (await api(stack, token, 'GET', '/studies?limit=2')) as { results: { item_id: string }[] };
  if (studies.results.length === 0) throw new Error('no studies: is the study sync working?');
  const ids: string[] = [];
  for (let i = 0; i < RELEASES; i++) {
    const release = await api(stack, token, 'POST', '/releases', {
      name: `bench release ${i}`,
      description: 'benchmark',
      author: 'bench',
      is_major: false,
      studies: studies.results.map((s) => s.item_id),
    });
    ids.push(release.item_id);
  }
  const target = ids[0];
  for (let i = 0; i < NOTES; i++)
    await api(stack, token, 'POST', '/release-notes', {
      description: `note ${i}`,
      author: 'bench',
      release: target,
      study: studies.results[0].item_id,
    });
  // Let the orchestration (if any) settle the releases in `staged`, so nothing runs behind the measurements.
  const deadline = Date.now() + 60_000;
  for (;;) {
    const states = await Promise.all(
      ids.map(async (id) => ((await api(stack, token, 'GET', `/releases/${id}`)) as { state: string }).state),
    );
    if (states.every((s) => !['initializing', 'running'].includes(s))) break;
    if (Date.now() > deadline) {
      say(`  releases still moving after 60 s (${[...new Set(states)].join(', ')}); measuring anyway`);
      break;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  const release = (await api(stack, token, 'GET', `/releases/${target}`)) as {
    tasks: unknown[];
    notes: unknown[];
    state: string;
  };
  say(
    `  release ${target}: ${release.tasks.length} tasks, ${release.notes.length} notes, state ${release.state}`,
  );
  return { target, tasks: release.tasks.length, notes: release.notes.length, state: release.state };
}

async function measureHttp(label: string, opts: Parameters<typeof httpLoad>[0]): Promise<LoadResult> {
  if (HTTP_WARMUP > 0) await httpLoad({ ...opts, seconds: HTTP_WARMUP });
  const r = await httpLoad(opts);
  say(`  ${label}: ${fmt(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, failures ${r.failures}`);
  return r;
}

async function measureLoop(ceiling: DdbCeiling, op: CeilingOp): Promise<LoopResult> {
  if (LOOP_WARMUP > 0) await ceiling.loop(op, 8, LOOP_WARMUP);
  const r = await ceiling.loop(op, CONNECTIONS, SECONDS);
  say(
    `  ${op}@${CONNECTIONS}: ${fmt(r.ops)} ops/s, p50 ${fmt(r.p50, 1)} ms, p99 ${fmt(r.p99, 1)} ms, errors ${r.errors}`,
  );
  return r;
}

/**
 * Diagnostic, not a ceiling: a route's own DynamoDB work through the releases repository (decoded and
 * re-validated), without HTTP or token checks.
 */
async function measureRepository(
  endpoint: string,
  name: string,
  work: (repo: DynamoReleaseRepository) => Promise<unknown>,
): Promise<LoopResult> {
  const names = tableEnv(process.env.TABLE_PREFIX ?? 'local');
  const doc = benchDocumentClient(endpoint);
  const repo = new DynamoReleaseRepository(doc, {
    coordinator: names.COORDINATOR_TABLE,
    studies: names.STUDIES_TABLE,
  });
  const once = () => work(repo);
  try {
    if (LOOP_WARMUP > 0) await loopOf(once, 8, LOOP_WARMUP);
    const r = await loopOf(once, CONNECTIONS, SECONDS);
    say(
      `  ${name}@${CONNECTIONS}: ${fmt(r.ops)} ops/s, p50 ${fmt(r.p50, 1)} ms, p99 ${fmt(r.p99, 1)} ms, errors ${r.errors}`,
    );
    return r;
  } finally {
    doc.destroy();
  }
}

const asDiagnostic = (r: LoopResult) => ({
  rps: r.ops,
  p50: Math.round(r.p50),
  p99: Math.round(r.p99),
  failures: r.errors,
  requests: r.calls,
  statusCodes: {},
});

/**
 * The ceiling GET /releases/<id> is held to: a raw DocumentClient Query (strongly consistent, no decoding) of the
 * release's whole item collection (the release item, its tasks and its notes) in the stack's own table.
 */
async function measureCollectionQuery(endpoint: string, releaseId: string): Promise<LoopResult> {
  const names = tableEnv(process.env.TABLE_PREFIX ?? 'local');
  const doc = benchDocumentClient(endpoint);
  const query = () =>
    doc.send(
      new QueryCommand({
        TableName: names.COORDINATOR_TABLE,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': K.releasePk(releaseId) },
        ConsistentRead: true,
      }),
    );
  try {
    if (LOOP_WARMUP > 0) await loopOf(query, 8, LOOP_WARMUP);
    const r = await loopOf(query, CONNECTIONS, SECONDS);
    say(
      `  Query of the collection@${CONNECTIONS}: ${fmt(r.ops)} ops/s, p50 ${fmt(r.p50, 1)} ms, p99 ${fmt(r.p99, 1)} ms, errors ${r.errors}`,
    );
    return r;
  } finally {
    doc.destroy();
  }
}

async function main() {
  say('Starting the local stack...');
  // Task services that never call back, each task staged at its first poll: the seeded releases settle in staged
  // and make no background work while the API is measured.
  const services = await startFakeFleet(TASKS, { name: 'bench-service', stagePolls: 1, publishPolls: 1 });
  // Health checks every hour and fast polling: the seeded releases settle quickly and stay quiet afterwards.
  const stack = await benchStack({ HEALTH_INTERVAL_SECONDS: '3600', POLL_SECONDS: '1' });
  const ceiling = new DdbCeiling(stack.dynamodb);
  try {
    const token = await adminToken(stack);
    say('Seeding...');
    const seeded = await seed(stack, token, services.urls);
    await ceiling.seed();
    const auth = { Authorization: `Bearer ${token}` };
    const base = { connections: CONNECTIONS, seconds: SECONDS };

    say(`Measuring (${CONNECTIONS} connections, ${SECONDS} s each, after a warm-up)...`);
    // Each API run follows its matched raw baseline, on a JVM in the same state.
    const collection = await measureCollectionQuery(stack.dynamodb, seeded.target);
    const repoLoad = await measureRepository(stack.dynamodb, 'releases.load', async (repo) => {
      if (!(await repo.load(seeded.target))) throw new Error('release not found');
    });
    const getRelease = await measureHttp(`GET /releases/${seeded.target}`, {
      ...base,
      url: `${stack.coordinator}/releases/${seeded.target}`,
      headers: auth,
    });
    const getItem = await measureLoop(ceiling, 'GetItem');
    const query = await measureLoop(ceiling, 'Query');
    const repoList = await measureRepository(stack.dynamodb, 'releases.list', (repo) =>
      repo.list({}, { limit: 10, offset: 0 }),
    );
    const listReleases = await measureHttp('GET /releases?limit=10', {
      ...base,
      url: `${stack.coordinator}/releases?limit=10`,
      headers: auth,
    });
    const tx = await measureLoop(ceiling, 'TransactWrite2');
    const eventTx = await measureLoop(ceiling, 'EventTransaction');
    const postEvent = await measureHttp('POST /events', {
      ...base,
      url: `${stack.coordinator}/events`,
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ event_type: 'info', message: 'benchmark event', release: seeded.target }),
    });

    const ratio = (a: number, b: number) => (b > 0 ? a / b : 0);
    const rows = [
      {
        what: `GET /releases/<id> (${seeded.tasks} tasks, ${seeded.notes} notes)`,
        r: getRelease,
        ceiling: collection,
        ceilingName: `Query of the same item collection (${seeded.tasks + seeded.notes + 2} items, consistent)`,
        target: '>= 80%, p99 <= 40 ms',
        pass:
          ratio(getRelease.rps, collection.ops) >= 0.8 && getRelease.p99 <= 40 && getRelease.failures === 0,
      },
      {
        what: '(diagnostic) releases.load(id) in-process, no HTTP',
        r: asDiagnostic(repoLoad),
        ceiling: collection,
        ceilingName: 'Query of the same item collection',
        target: 'none',
        pass: undefined,
      },
      {
        what: 'GET /releases?limit=10',
        r: listReleases,
        ceiling: getItem,
        ceilingName: `GetItem (Query GSI Limit 10: ${fmt(query.ops)}/s, ratio ${fmt(ratio(listReleases.rps, query.ops) * 100)}%)`,
        target: '>= 40%',
        pass: ratio(listReleases.rps, getItem.ops) >= 0.4 && listReleases.failures === 0,
      },
      {
        what: '(diagnostic) releases.list(limit 10) in-process, no HTTP',
        r: asDiagnostic(repoList),
        ceiling: getItem,
        ceilingName: 'GetItem',
        target: 'none',
        pass: undefined,
      },
      {
        what: 'POST /events',
        r: postEvent,
        ceiling: tx,
        ceilingName: 'TransactWriteItems, 2 Puts',
        target: '>= 80%',
        pass: ratio(postEvent.rps, tx.ops) >= 0.8 && postEvent.failures === 0,
      },
      {
        what: 'POST /events, against its own transaction',
        r: postEvent,
        ceiling: eventTx,
        ceilingName: 'TransactWriteItems of the same shape (a Put, 2 counter ADDs, a ConditionCheck)',
        target: 'none',
        pass: undefined,
      },
    ];
    const table = [
      '| Route | req/s | p50 ms | p99 ms | non-2xx/errors | Ceiling (raw DynamoDB Local @' +
        CONNECTIONS +
        ') | ceiling ops/s, p99 ms | Ratio | Target | Met |',
      '|---|---:|---:|---:|---:|---|---:|---:|---|---|',
      ...rows.map(
        (x) =>
          `| ${x.what} | ${fmt(x.r.rps)} | ${x.r.p50} | ${x.r.p99} | ${x.r.failures} | ${x.ceilingName} | ${fmt(x.ceiling.ops)}, ${fmt(x.ceiling.p99, 1)} | ${fmt(ratio(x.r.rps, x.ceiling.ops) * 100)}% | ${x.target} | ${x.pass === undefined ? '-' : x.pass ? 'yes' : '**no**'} |`,
      ),
    ].join('\n');
    const section = [
      '## Coordinator API (`npm run bench:api`)',
      '',
      machineInfo(),
      '',
      `autocannon, ${CONNECTIONS} connections, ${SECONDS} s per route after a ${HTTP_WARMUP} s warm-up, against \`npm start\``,
      `(tsx, one Node process serving every handler) with DynamoDB Local on disk (-Xmx256m). The ceiling is a raw`,
      `DocumentClient loop at concurrency ${CONNECTIONS} in the benchmark's process against the same JVM and database,`,
      `run just before each route. Seed: ${TASKS} task services, ${RELEASES} releases of ${seeded.tasks} tasks,`,
      `${seeded.notes} notes on the measured release (state \`${seeded.state}\`). The load generator, the API process and the JVM`,
      'share the same cores, so these are whole-box numbers.',
      '',
      table,
      '',
      `Reading the table: GET /releases/<id> reads the release item, its task view item and its notes, one strongly`,
      `consistent Query of ${seeded.notes + 2} items instead of the ${seeded.tasks + seeded.notes + 2} of the whole collection; the route runs at`,
      `${fmt(ratio(getRelease.rps, repoLoad.ops) * 100)}% of the repository's load alone (HTTP, the token check and JSON rendering are the rest). GET /releases?limit=10`,
      `is one Query of the page, one BatchGetItem of the page's task views and notes, and one read of its counter: no`,
      `query per release; that work alone, in-process, runs at ${fmt(ratio(repoList.ops, getItem.ops) * 100)}% of a one-item GetItem, so no front end`,
      `can reach 40% of GetItem with it. POST /events writes the event with the counts it moves (all events, the`,
      `release's events) and the check that its release exists: a 4-item transaction, where the 2-item ceiling`,
      `was set when an event was 2 items; against a raw transaction of its own shape it runs at ${fmt(ratio(postEvent.rps, eventTx.ops) * 100)}%.`,
      '',
      'Status codes: ' +
        rows
          // A route measured once appears once, even where it has two rows.
          .filter(
            (x, i, all) => Object.keys(x.r.statusCodes).length && all.findIndex((y) => y.r === x.r) === i,
          )
          .map((x) => `${x.what.split(' (')[0]}: ${JSON.stringify(x.r.statusCodes)}`)
          .join('; ') +
        '.',
    ].join('\n');
    say('');
    say(section);
    if (WRITE_DOCS) {
      writeSection(resolve(ROOT, 'docs/benchmarks.md'), 'bench:api', section);
      say('\nWritten to docs/benchmarks.md');
    }
  } catch (err) {
    say(`\nThe stack's last output:\n${stack.tail()}`);
    throw err;
  } finally {
    ceiling.destroy();
    await stack.stop();
    await services.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`bench:api failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
