import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoTaskServiceRepository } from '#functions/adapters/dynamodb/task-services.js';
import { freshCredentials } from '#functions/coordinator/service-credentials.js';
import { COORDINATOR_API } from '#lib/api-manifest.js';
import { type CoordinatorApi, seedStudies, startCoordinatorApi } from '#test/helpers/coordinator-api.js';
import {
  body,
  credentials,
  expectErrorBody,
  FUZZ_RUNS,
  FUZZ_SEED,
  type FuzzRoute,
  fill,
  queryString,
  routesOf,
  segment,
  snapshot,
} from '#test/helpers/fuzz.js';

/**
 * Every route of the coordinator API, fuzzed (see test/helpers/fuzz.ts). Task-service URLs are judged under the
 * deployed defaults (no private addresses, no plain http), so no case ever reaches a real host.
 */
const FIELDS = [
  'name',
  'description',
  'author',
  'url',
  'enabled',
  'client_id',
  'is_major',
  'tags',
  'studies',
  'state',
  'progress',
  'event_type',
  'message',
  'release',
  'study',
  'task',
  'task_service',
  'unknown_field',
];

let api: CoordinatorApi;
let routes: FuzzRoute[];
let known: string[];
let cases = 0;

beforeAll(async () => {
  api = await startCoordinatorApi({
    TASK_SERVICE_ALLOW_PRIVATE: 'false',
    TASK_SERVICE_ALLOW_HTTP: 'false',
    TASK_SERVICE_PROBE_TIMEOUT_MS: '300',
  });
  routes = await routesOf(COORDINATOR_API);
  const study = 'SD_FZ000001';
  await seedStudies(api, [study]);
  // A registered service (written directly: its URL would not pass the probe), a release with its task, a note, an event.
  const services = new DynamoTaskServiceRepository(api.doc, {
    coordinator: api.tables.COORDINATOR_TABLE,
    studies: api.tables.STUDIES_TABLE,
  });
  const svc = await services.create(
    {
      name: 'bound',
      description: '',
      author: '',
      url: 'https://svc.invalid',
      enabled: true,
      healthStatus: 'ok',
      lastOkStatus: 0,
      clientId: 'client-a',
    },
    freshCredentials(),
  );
  const rel = await api.call('POST', '/releases', { body: { name: 'fuzz', studies: [study] } });
  const note = await api.call('POST', '/release-notes', {
    body: { description: 'n', release: rel.body.item_id },
  });
  const event = await api.call('POST', '/events', { body: { message: 'seed' } });
  if (rel.status !== 200) throw new Error(`seeding a release: ${rel.status} ${rel.text}`);
  known = [svc.id, rel.body.item_id, rel.body.tasks[0].item_id, note.body.item_id, event.body.item_id, study];
  expect(known.every(Boolean)).toBe(true);
});
afterAll(async () => {
  process.stdout.write(`coordinator API fuzz: ${cases} cases over ${routes?.length ?? 0} routes\n`);
  await api?.close();
});

describe('fuzzing every coordinator route', () => {
  it('answers every case without a 5xx, with the documented error body, writing nothing when it refuses', {
    timeout: 600_000,
  }, async () => {
    const { header } = credentials(api.idp);
    const tables = [api.tables.COORDINATOR_TABLE, api.tables.STUDIES_TABLE];
    // Every route, plus unknown paths and methods the routes do not serve.
    const targets = [
      ...routes.map((r) => ({ method: r.method as string, path: r.path })),
      { method: 'PUT', path: '/releases/{id}' },
      { method: 'POST', path: '/studies' },
      { method: 'GET', path: '/{id}/{id}/unknown' },
    ];
    for (const target of targets) {
      const params = (target.path.match(/\{\w+\}/g) ?? []).length;
      await fc.assert(
        fc.asyncProperty(
          fc.array(segment(known), { minLength: params, maxLength: params }),
          queryString,
          body(FIELDS, known),
          header,
          async (segments, query, generated, auth) => {
            cases++;
            // fetch sends no body with GET (API Gateway would pass one on; the handlers ignore it there).
            const payload = target.method === 'GET' ? undefined : generated;
            const path = `${fill(target.path, segments)}${query ? `?${query}` : ''}`;
            const writes = target.method !== 'GET';
            const before = writes ? await snapshot(api.doc, tables) : '';
            const res = await api.call(target.method, path, {
              token: null,
              headers: {
                ...(auth.value ? { Authorization: auth.value } : {}),
                ...(payload !== undefined ? { 'Content-Type': 'application/json' } : {}),
              },
              body: payload,
            });
            const what = `${target.method} ${path.slice(0, 200)} as ${auth.name}: ${res.status} ${res.text.slice(0, 300)}`;
            expect(res.status, what).toBeLessThan(500);
            if (res.status >= 400) {
              expectErrorBody(res, what);
              if (writes) expect(await snapshot(api.doc, tables), `wrote despite ${what}`).toBe(before);
            }
          },
        ),
        { seed: FUZZ_SEED, numRuns: FUZZ_RUNS, endOnFailure: true },
      );
    }
  });
});
