import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { loadHandlerModule } from '#local/handlers.js';
import { type CoordinatorApi, startCoordinatorApi } from '#test/helpers/coordinator-api.js';

/** A dataservice look-alike under a path prefix; `_links.next` is relative to the origin, as the real one's is. */
let source: Server;
let sourceUrl: string;
let studies: Record<string, unknown>[] = [];
const requested: string[] = [];
let failAfterFirstPage = false;

let api: CoordinatorApi;
type SyncResult = { total: number; new: number; deleted: number; restored: number };
let runStudySync: (source?: string) => Promise<SyncResult>;
/** The scheduled function's own entry point: it reads STUDIES_SOURCE. */
let scheduledHandler: () => Promise<SyncResult>;

const study = (n: number, extra: Record<string, unknown> = {}) => ({
  kf_id: `SD_${String(n).padStart(8, '0')}`,
  name: `Study ${n}`,
  version: 'v1',
  visible: n % 2 === 0,
  created_at: `2019-01-${String((n % 28) + 1).padStart(2, '0')}T10:00:00.123456+00:00`,
  ...extra,
});

beforeAll(async () => {
  source = createServer((req, res) => {
    requested.push(req.url ?? '');
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/api/studies') {
      res.writeHead(404);
      res.end();
      return;
    }
    const limit = Number(url.searchParams.get('limit'));
    const after = Number(url.searchParams.get('after') ?? 0);
    if (failAfterFirstPage && after > 0) {
      res.writeHead(502);
      res.end();
      return;
    }
    const page = studies.slice(after, after + limit);
    const next =
      after + limit < studies.length ? `/api/studies?limit=${limit}&after=${after + limit}` : undefined;
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(
      JSON.stringify({
        results: page,
        _links: { self: req.url, ...(next ? { next } : {}) },
        total: studies.length,
      }),
    );
  });
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
  sourceUrl = `http://127.0.0.1:${(source.address() as AddressInfo).port}/api`;
  api = await startCoordinatorApi();
  // The scheduled function's module, from the sources or the bundle (LOCAL_HANDLERS).
  ({ runStudySync, handler: scheduledHandler } = await loadHandlerModule<{
    runStudySync: typeof runStudySync;
    handler: typeof scheduledHandler;
  }>('functions/coordinator/handlers/study-sync.ts'));
});
afterAll(async () => {
  await api?.close();
  await new Promise<void>((r) => source.close(() => r()));
});

describe('study sync from a dataservice URL', () => {
  it('reads every page by following _links.next from the origin, and mirrors the fields', async () => {
    studies = Array.from({ length: 230 }, (_, i) => study(i + 1));
    const result = await runStudySync(sourceUrl);
    expect(result).toMatchObject({ total: 230, new: 230, deleted: 0 });
    expect(requested[0]).toBe('/api/studies?limit=100');
    expect(requested).toHaveLength(3);
    const list = await api.call('GET', '/studies?limit=100');
    expect(list.body.count).toBe(230);
    const one = await api.call('GET', '/studies/SD_00000002');
    expect(one.status).toBe(200);
    expect(one.body).toEqual({
      item_id: 'SD_00000002',
      kf_id: 'SD_00000002',
      name: 'Study 2',
      version: 'v1',
      visible: true,
      last_pub_version: null,
      last_pub_date: null,
      deleted: false,
      created_at: '2019-01-03T10:00:00.123456Z',
    });
  });

  it('keeps last_pub_version/last_pub_date, flags vanished studies deleted and restores reappearing ones', async () => {
    const repo = new DynamoReleaseRepository(api.doc, {
      coordinator: api.tables.COORDINATOR_TABLE,
      studies: api.tables.STUDIES_TABLE,
    });
    await repo.applyChange({
      releaseId: 'RE_00000000',
      studies: [
        { studyId: 'SD_00000001', lastPubVersion: '0.1.0', lastPubDate: '2024-01-01T00:00:00.000000Z' },
      ],
    });
    studies = studies
      .filter((s) => s.kf_id !== 'SD_00000003')
      .map((s) => (s.kf_id === 'SD_00000001' ? { ...s, name: 'Renamed' } : s));
    const r1 = await runStudySync(sourceUrl);
    expect(r1).toMatchObject({ total: 229, new: 0, deleted: 1 });
    const kept = (await api.call('GET', '/studies/SD_00000001')).body;
    expect(kept).toMatchObject({
      name: 'Renamed',
      last_pub_version: '0.1.0',
      last_pub_date: '2024-01-01T00:00:00.000000Z',
    });
    expect((await api.call('GET', '/studies/SD_00000003')).body.deleted).toBe(true);
    studies.push(study(3));
    const r2 = await runStudySync(sourceUrl);
    expect(r2).toMatchObject({ restored: 1, deleted: 0 });
    expect((await api.call('GET', '/studies/SD_00000003')).body.deleted).toBe(false);
  });

  it('flags nothing deleted when the source fails mid-way', async () => {
    const before = (await api.call('GET', '/studies?limit=100')).body.results.filter(
      (s: { deleted: boolean }) => s.deleted,
    );
    failAfterFirstPage = true;
    await expect(runStudySync(sourceUrl)).rejects.toThrow(/502/);
    failAfterFirstPage = false;
    const after = (await api.call('GET', '/studies?limit=100')).body.results.filter(
      (s: { deleted: boolean }) => s.deleted,
    );
    expect(after).toEqual(before);
  });
});

describe('study sync from a file', () => {
  it('runs on schedule from STUDIES_SOURCE, the way EventBridge invokes it', async () => {
    process.env.STUDIES_SOURCE = 'local/studies.sample.json';
    try {
      expect((await scheduledHandler()).total).toBe(5);
    } finally {
      delete process.env.STUDIES_SOURCE;
    }
  });

  it('loads the bundled sample file', async () => {
    const result = await runStudySync('local/studies.sample.json');
    expect(result.total).toBe(5);
    const s = await api.call('GET', '/studies/SD_BHJXBDQK');
    expect(s.body).toMatchObject({
      deleted: false,
      created_at: '2018-03-19T20:12:24.702813Z',
      visible: true,
    });
  });
});

describe('GET /studies', () => {
  it('is read-only: writes are 405 with Allow, unknown ids 404', async () => {
    const post = await api.call('POST', '/studies', { body: {} });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
    for (const m of ['PATCH', 'PUT', 'DELETE']) {
      const res = await api.call(m, '/studies/SD_BHJXBDQK', { body: {} });
      expect(res.status).toBe(405);
    }
    expect((await api.call('GET', '/studies/SD_ZZZZZZZZ')).status).toBe(404);
  });

  it('pages with limit/offset and absolute links', async () => {
    const res = await api.call('GET', '/studies?limit=5&offset=5');
    expect(res.body.results).toHaveLength(5);
    expect(res.body.next.replace(/&cursor=[\w-]+$/, '')).toBe(`${api.baseUrl}/studies?limit=5&offset=10`);
    expect(res.body.next).toMatch(/&cursor=[\w-]+$/);
    expect(res.body.previous).toBe(`${api.baseUrl}/studies?limit=5&offset=0`);
  });
});
