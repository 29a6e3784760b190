import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '#functions/files/tokens.js';
import { bytesOf, type FilesApi, startFilesApi } from './harness.js';

let api: FilesApi;
let fileA: { fileId: string; versionId: string };
let fileB: { fileId: string; versionId: string };

beforeAll(async () => {
  api = await startFilesApi();
  fileA = await api.upload(api.studyA, bytesOf(100, 1));
  fileB = await api.upload(api.studyB, bytesOf(100, 2));
});
afterAll(async () => {
  await api?.close();
});

const download = (studyId: string, f: { fileId: string }, token: string) =>
  api.call('GET', `/download/study/${studyId}/file/${f.fileId}?token=${encodeURIComponent(token)}`, {
    token: null,
  });

describe('the developer token lifecycle', () => {
  it('creates, lists masked, downloads any file, and stops working the moment it is deleted', async () => {
    const created = await api.call('POST', '/developer-tokens', { body: { name: 'nightly export' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'nightly export', created_by: 'admin-user' });
    const secret: string = created.body.token;
    expect(secret).toMatch(/^sfdt_[A-Za-z0-9_-]{43}$/);

    const listed = await api.call('GET', '/developer-tokens');
    expect(listed.status).toBe(200);
    const entry = listed.body.results.find((t: { name: string }) => t.name === 'nightly export');
    expect(entry.token).toBe(`${secret.slice(0, 9)}${'*'.repeat(12)}`);
    expect(listed.text).not.toContain(secret);

    expect((await download(api.studyA, fileA, secret)).status).toBe(200);
    expect((await download(api.studyB, fileB, secret)).status).toBe(200);
    const header = await api.call('GET', `/download/study/${api.studyB}/file/${fileB.fileId}`, {
      token: null,
      headers: { Authorization: `Token ${secret}` },
    });
    expect(header.status).toBe(200);

    const deleted = await api.call('DELETE', `/developer-tokens/${encodeURIComponent('nightly export')}`);
    expect(deleted.status).toBe(200);
    const after = await download(api.studyA, fileA, secret);
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('unauthorized');
    expect((await api.call('DELETE', '/developer-tokens/nightly%20export')).status).toBe(404);

    const audit = await api.call('GET', '/audit?limit=100');
    const actions = audit.body.results
      .filter((r: { dev_token: string | null }) => r.dev_token === 'nightly export')
      .map((r: { action: string }) => r.action);
    expect(actions).toContain('dev_token.create');
    expect(actions).toContain('dev_token.delete');
    expect(actions.filter((a: string) => a === 'download')).toHaveLength(3);
  });

  it('keeps names unique', async () => {
    expect((await api.call('POST', '/developer-tokens', { body: { name: 'unique' } })).status).toBe(201);
    const again = await api.call('POST', '/developer-tokens', { body: { name: 'unique' } });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
  });

  it('stores only the hash of the secret', async () => {
    const { token } = (await api.call('POST', '/developer-tokens', { body: { name: 'hashed' } })).body;
    const items = (await api.doc.send(new ScanCommand({ TableName: process.env.FILES_TABLE }))).Items ?? [];
    expect(JSON.stringify(items)).not.toContain(token);
    expect(items.some((i) => i.pk === `DEVHASH#${hashToken(token)}`)).toBe(true);
  });

  it('can mint a signed URL, which then works once for anyone', async () => {
    const { token } = (await api.call('POST', '/developer-tokens', { body: { name: 'minter' } })).body;
    const minted = await api.call('POST', `/signed-url/study/${api.studyB}/files/${fileB.fileId}`, {
      token: null,
      headers: { Authorization: `Token ${token}` },
    });
    expect(minted.status).toBe(200);
    expect((await fetch(minted.body.url)).status).toBe(200);
    expect((await fetch(minted.body.url)).status).toBe(401);
  });

  it('is managed by admins only', async () => {
    for (const [token, status] of [
      [null, 401],
      [api.memberA, 403],
      [api.outsider, 403],
    ] as const) {
      expect((await api.call('POST', '/developer-tokens', { token, body: { name: 'x' } })).status).toBe(
        status,
      );
      expect((await api.call('GET', '/developer-tokens', { token })).status).toBe(status);
      expect((await api.call('DELETE', '/developer-tokens/unique', { token })).status).toBe(status);
    }
    // A developer token does not manage developer tokens either.
    const { token } = (await api.call('POST', '/developer-tokens', { body: { name: 'not-an-admin' } })).body;
    const res = await api.call('GET', '/developer-tokens', {
      token: null,
      headers: { Authorization: `Token ${token}` },
    });
    expect(res.status).toBe(401);
  });

  it('validates names and bodies', async () => {
    const bad = await api.call('POST', '/developer-tokens', { body: { name: '../etc', extra: 1 } });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.error.fields).sort()).toEqual(['body', 'name']);
  });

  it('never expires and reaches every study unless narrowed', async () => {
    const created = await api.call('POST', '/developer-tokens', { body: { name: 'plain' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ expires_at: null, studies: null });
    api.clock.advance(5 * 365 * 24 * 3600 * 1000);
    expect((await download(api.studyB, fileB, created.body.token)).status).toBe(200);
  });

  it('refuses an expiry in the past, both expiry spellings at once, and studies that are empty or not study ids', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ expires_at: '2000-01-01T00:00:00Z' }, 'expires_at'],
      [{ expires_at: 'tomorrow' }, 'expires_at'],
      [{ expires_at: '2099-01-01T00:00:00Z', expires_in: 60 }, 'expires_in'],
      [{ expires_in: 0 }, 'expires_in'],
      [{ studies: [] }, 'studies'],
      [{ studies: ['not-a-study'] }, 'studies.0'],
    ];
    for (const [extra, field] of cases) {
      const res = await api.call('POST', '/developer-tokens', { body: { name: `bad-${field}`, ...extra } });
      expect(res.status, JSON.stringify(extra)).toBe(400);
      expect(Object.keys(res.body.error.fields), JSON.stringify(extra)).toContain(field);
    }
  });
});

describe('narrowed developer tokens', () => {
  const drsObject = (versionId: string, token: string) =>
    api.call('GET', `/ga4gh/drs/v1/objects/${versionId}`, {
      token: null,
      headers: { Authorization: `Token ${token}` },
    });
  const mint = (studyId: string, f: { fileId: string }, token: string) =>
    api.call('POST', `/signed-url/study/${studyId}/files/${f.fileId}?token=${encodeURIComponent(token)}`, {
      token: null,
    });

  it('with studies, reaches those studies only: downloads, signed URLs and DRS', async () => {
    const created = await api.call('POST', '/developer-tokens', {
      body: { name: 'study-a-only', studies: [api.studyA, api.studyA] },
    });
    expect(created.status).toBe(201);
    expect(created.body.studies).toEqual([api.studyA]);
    const secret: string = created.body.token;
    expect((await download(api.studyA, fileA, secret)).status).toBe(200);
    const other = await download(api.studyB, fileB, secret);
    expect(other.status).toBe(403);
    expect(other.body.error.message).toContain('does not cover');
    expect((await mint(api.studyA, fileA, secret)).status).toBe(200);
    expect((await mint(api.studyB, fileB, secret)).status).toBe(403);
    expect((await drsObject(fileA.versionId, secret)).status).toBe(200);
    // DRS finds objects by their own id: one of another study is the unknown id's 404.
    const drsOther = await drsObject(fileB.versionId, secret);
    expect(drsOther.status).toBe(404);
    const unknown = await drsObject('FV_ZZZZZZZZ', secret);
    expect(JSON.stringify(drsOther.body).replace(fileB.versionId, 'ID')).toBe(
      JSON.stringify(unknown.body).replace('FV_ZZZZZZZZ', 'ID'),
    );
    const listed = await api.call('GET', '/developer-tokens?limit=100');
    expect(listed.body.results.find((t: { name: string }) => t.name === 'study-a-only').studies).toEqual([
      api.studyA,
    ]);
  });

  it('with an expiry, stops working at that instant everywhere, and so do the signed URLs it minted', async () => {
    const created = await api.call('POST', '/developer-tokens', {
      body: { name: 'one-hour', expires_in: 3600 },
    });
    expect(created.status).toBe(201);
    expect(Date.parse(created.body.expires_at)).toBe(api.clock.nowMs() + 3600_000);
    const secret: string = created.body.token;
    expect((await download(api.studyB, fileB, secret)).status).toBe(200);
    expect((await drsObject(fileB.versionId, secret)).status).toBe(200);
    api.clock.advance(3600_000 - 10_000);
    const link = await mint(api.studyA, fileA, secret);
    expect(link.status).toBe(200);
    api.clock.advance(10_000);
    const expired = await download(api.studyA, fileA, secret);
    expect(expired.status).toBe(401);
    expect(expired.body.error.message).toContain('expired');
    expect((await mint(api.studyA, fileA, secret)).status).toBe(401);
    expect((await drsObject(fileA.versionId, secret)).status).toBe(401);
    // The link was minted in time and is within its own 30 s, but its token has expired.
    expect((await fetch(link.body.url)).status).toBe(401);

    const until = await api.call('POST', '/developer-tokens', {
      body: { name: 'until', expires_at: new Date(api.clock.nowMs() + 60_000).toISOString() },
    });
    expect(until.status).toBe(201);
    expect((await download(api.studyA, fileA, until.body.token)).status).toBe(200);
    api.clock.advance(60_000);
    expect((await download(api.studyA, fileA, until.body.token)).status).toBe(401);
  });
});
