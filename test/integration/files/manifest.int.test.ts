import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesOf, type FilesApi, MiB, sha256, startFilesApi } from './harness.js';

/**
 * What a whole-study download stands on: a study's manifest (JSON and TSV, paged, readable with a developer token
 * narrowed to the study), each file's state in the listings, duplicate names marked at upload, and presigned GETs
 * whose lifetime fits their object (the download redirect and DRS access URLs, bulk ones with their expiry), and the
 * GraphQL schema in SDL.
 */
let api: FilesApi;
const small = bytesOf(3000, 61);
const empty = Buffer.alloc(0);
const large = bytesOf(2 * MiB + 7, 62);
let a: { fileId: string; versionId: string };
let e: { fileId: string; versionId: string };
let big: { fileId: string; versionId: string };
let pendingFile: string;
let narrowed: string;
let other: string;

beforeAll(async () => {
  api = await startFilesApi();
  a = await api.upload(api.studyA, small, {
    fileName: 'genes.tsv',
    contentType: 'text/tab-separated-values',
  });
  e = await api.upload(api.studyA, empty, { fileName: 'empty.txt' });
  big = await api.upload(api.studyA, large, { fileName: 'reads.bin' });
  // Declared and never uploaded: listed as pending, and no row of the manifest.
  const declared = await api.call('POST', `/studies/${api.studyA}/files`, {
    body: { file_name: 'later.csv', size: 10, sha256: sha256(Buffer.alloc(10)) },
  });
  pendingFile = declared.body.file.kf_id;
  await api.upload(api.studyB, bytesOf(100, 63), { fileName: 'b.txt' });
  const token = (name: string, studies: string[]) =>
    api.call('POST', '/developer-tokens', { body: { name, studies, expires_in: 3600 } });
  narrowed = (await token('manifest-a', [api.studyA])).body.token;
  other = (await token('manifest-b', [api.studyB])).body.token;
});
afterAll(async () => {
  await api?.close();
});

describe('GET /studies/<sid>/manifest', () => {
  it('has one row per file with an available version, the empty one included, and names the others', async () => {
    const res = await api.call('GET', `/studies/${api.studyA}/manifest`);
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(4);
    const host = new URL(api.baseUrl).host;
    const rows = res.body.results as Record<string, unknown>[];
    expect(rows.map((r) => r.file_id).sort()).toEqual([a.fileId, e.fileId, big.fileId].sort());
    expect(rows.find((r) => r.file_id === a.fileId)).toEqual({
      file_id: a.fileId,
      version_id: a.versionId,
      drs_uri: `drs://${host}/${a.versionId}`,
      name: 'genes.tsv',
      size: small.length,
      sha256: sha256(small),
      content_type: 'text/tab-separated-values',
      created_at: expect.stringMatching(/Z$/),
    });
    expect(rows.find((r) => r.file_id === e.fileId)).toMatchObject({ size: 0, sha256: sha256(empty) });
    expect(res.body.skipped).toEqual([
      { file_id: pendingFile, name: 'later.csv', state: 'pending', reason: expect.stringContaining('never') },
    ]);
  });

  it('answers TSV for ?format=tsv or Accept: text/tab-separated-values, paged with a Link header', async () => {
    const byQuery = await api.call('GET', `/studies/${api.studyA}/manifest?format=tsv`);
    expect(byQuery.status).toBe(200);
    expect(byQuery.headers.get('content-type')).toMatch(/^text\/tab-separated-values/);
    const lines = byQuery.text.trimEnd().split('\n');
    expect(lines[0].split('\t')).toEqual([
      'file_id',
      'version_id',
      'drs_uri',
      'name',
      'size',
      'sha256',
      'content_type',
      'created_at',
    ]);
    expect(lines).toHaveLength(4);
    expect(lines.find((l) => l.startsWith(big.fileId))?.split('\t')[4]).toBe(String(large.length));

    const page = await api.call('GET', `/studies/${api.studyA}/manifest?limit=2`, {
      headers: { Accept: 'text/tab-separated-values' },
    });
    expect(page.headers.get('content-type')).toMatch(/^text\/tab-separated-values/);
    const next = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1];
    expect(next).toBeDefined();
    const rest = await api.call('GET', next!, { headers: { Accept: 'text/tab-separated-values' } });
    const ids = [page, rest].flatMap((r) =>
      r.text
        .trimEnd()
        .split('\n')
        .slice(1)
        .map((l) => l.split('\t')[0]),
    );
    expect(ids.sort()).toEqual([a.fileId, e.fileId, big.fileId].sort());
    expect(rest.headers.get('link')).toBeNull();
  });

  it('is readable with a developer token narrowed to the study, in every way one is sent, and no other', async () => {
    for (const opts of [
      { token: null, headers: { Authorization: `Token ${narrowed}` } },
      { token: narrowed },
      { token: null, query: `?token=${narrowed}` },
    ]) {
      const res = await api.call('GET', `/studies/${api.studyA}/manifest${opts.query ?? ''}`, opts);
      expect(res.status, JSON.stringify(opts)).toBe(200);
      expect(res.body.results).toHaveLength(3);
    }
    const wrong = await api.call('GET', `/studies/${api.studyA}/manifest`, { token: other });
    expect(wrong.status).toBe(403);
    expect((await api.call('GET', `/studies/${api.studyA}/manifest`, { token: api.memberB })).status).toBe(
      403,
    );
    expect((await api.call('GET', `/studies/${api.studyA}/manifest`, { token: null })).status).toBe(401);
    expect((await api.call('GET', `/studies/${api.studyA}/manifest`, { token: api.memberA })).status).toBe(
      200,
    );
  });
});

describe('file states in the listings', () => {
  it('GET /studies/<sid>/files gives each file its state and newest available version', async () => {
    const res = await api.call('GET', `/studies/${api.studyA}/files`);
    const byId = Object.fromEntries(res.body.results.map((f: { kf_id: string }) => [f.kf_id, f]));
    expect(byId[a.fileId]).toMatchObject({
      state: 'available',
      latest_version: { kf_id: a.versionId, size: small.length, sha256: sha256(small) },
    });
    expect(byId[a.fileId].download_url).toMatch(/\/download\/study\//);
    expect(byId[pendingFile]).toMatchObject({ state: 'pending', latest_version: null, download_url: null });
    const one = await api.call('GET', `/files/${pendingFile}`);
    expect(one.body).toMatchObject({ state: 'pending', download_url: null });
  });

  it("GraphQL's File.state says the same", async () => {
    const res = await api.call('POST', '/graphql', {
      body: {
        query: 'query($s: String!) { allFiles(studyId: $s, first: 10) { nodes { kfId state } } }',
        variables: { s: api.studyA },
      },
    });
    const states = Object.fromEntries(
      res.body.data.allFiles.nodes.map((n: { kfId: string; state: string }) => [n.kfId, n.state]),
    );
    expect(states).toEqual({
      [a.fileId]: 'AVAILABLE',
      [e.fileId]: 'AVAILABLE',
      [big.fileId]: 'AVAILABLE',
      [pendingFile]: 'PENDING',
    });
  });

  it('marks a new file whose name its study already has, and accepts it', async () => {
    const declare = (file_name: string) =>
      api.call('POST', `/studies/${api.studyA}/files`, {
        body: { file_name, size: 1, sha256: sha256(Buffer.from('x')) },
      });
    const again = await declare('genes.tsv');
    expect(again.status).toBe(201);
    expect(again.body.duplicate_name).toBe(true);
    expect((await declare('fresh-name.tsv')).body.duplicate_name).toBe(false);
    const version = await api.call('POST', `/files/${a.fileId}/versions`, {
      body: { file_name: 'genes.tsv', size: 1, sha256: sha256(Buffer.from('x')) },
    });
    expect(version.body).toMatchObject({ duplicate_name: false, file: { state: 'available' } });
  });
});

describe('presigned GETs that fit their object', () => {
  it('the download redirect and a DRS access URL live 5 minutes plus a minute per 500 MB', async () => {
    const redirect = await api.call('GET', `/download/study/${api.studyA}/file/${big.fileId}`);
    expect(redirect.status).toBe(302);
    const location = new URL(redirect.headers.get('location') ?? '');
    expect(location.searchParams.get('X-Amz-Expires')).toBe('360');
    const access = await api.call('GET', `/ga4gh/drs/v1/objects/${big.versionId}/access/https`);
    expect(new URL(access.body.url).searchParams.get('X-Amz-Expires')).toBe('360');
    expect(Date.parse(access.body.expires_at) - api.clock.nowMs()).toBe(360_000);
  });

  it('a bulk access answer carries each URL’s expiry', async () => {
    const res = await api.call('POST', '/ga4gh/drs/v1/objects/access', {
      token: narrowed,
      body: { bulk_object_access_ids: [{ bulk_object_id: a.versionId }, { bulk_object_id: big.versionId }] },
    });
    expect(res.status).toBe(200);
    for (const item of res.body.resolved_drs_object_access_urls)
      expect(Date.parse(item.expires_at) - api.clock.nowMs()).toBe(360_000);
  });

  it('a range of the redirect target can be fetched again while it lives: a broken download resumes there', async () => {
    const redirect = await api.call('GET', `/download/study/${api.studyA}/file/${big.fileId}`, {
      token: null,
      headers: { Authorization: `Token ${narrowed}` },
    });
    const target = redirect.headers.get('location') ?? '';
    const first = await fetch(target, { headers: { Range: 'bytes=0-999' } });
    expect(first.status).toBe(206);
    const head = Buffer.from(await first.arrayBuffer());
    const rest = await fetch(target, { headers: { Range: `bytes=${head.length}-` } });
    expect(rest.status).toBe(206);
    expect(Buffer.concat([head, Buffer.from(await rest.arrayBuffer())]).equals(large)).toBe(true);
  });
});

describe('the GraphQL schema', () => {
  it('is published as SDL without a token: the committed openapi/files.graphql', async () => {
    const res = await api.call('GET', '/graphql/schema.graphql', { token: null, headers: { Accept: '*/*' } });
    expect(res.status).toBe(200);
    expect(res.text).toBe(readFileSync(new URL('../../../openapi/files.graphql', import.meta.url), 'utf8'));
    expect(res.text).toContain('state: FileState!');
  });
});
