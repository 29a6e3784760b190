import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintSignedUrl } from '#functions/files/downloads.js';
import { hashToken } from '#functions/files/tokens.js';
import { captureOutput } from '#test/helpers/emf.js';
import { bytesOf, type FilesApi, MiB, sha256, startFilesApi } from './harness.js';

let api: FilesApi;
let small: { fileId: string; versionId: string };
let large: { fileId: string; versionId: string };
const smallBytes = bytesOf(1500, 5);
const largeBytes = bytesOf(2 * MiB, 6);

beforeAll(async () => {
  api = await startFilesApi();
  small = await api.upload(api.studyA, smallBytes, { fileName: 'small.csv', contentType: 'text/csv' });
  large = await api.upload(api.studyA, largeBytes, { fileName: 'large.bin' });
});
afterAll(async () => {
  await api?.close();
});

async function mint(
  f: { fileId: string; versionId?: string },
  opts: { token?: string; method?: string } = {},
) {
  const version = f.versionId ? `/version/${f.versionId}` : '';
  const res = await api.call(
    opts.method ?? 'POST',
    `/signed-url/study/${api.studyA}/files/${f.fileId}${version}`,
    {
      token: opts.token ?? api.memberA,
    },
  );
  expect(res.status).toBe(200);
  return res.body as { url: string; expires_at: string };
}

const tokenOf = (url: string) => new URL(url).searchParams.get('token')!;

describe('minting a signed URL', () => {
  it('answers an absolute, version-pinned download URL with a token, and its expiry', async () => {
    const before = api.clock.nowMs();
    const signed = await mint({ fileId: small.fileId });
    expect(Object.keys(signed).sort()).toEqual(['expires_at', 'url']);
    const url = new URL(signed.url);
    expect(`${url.origin}${url.pathname}`).toBe(
      `${api.baseUrl}/download/study/${api.studyA}/file/${small.fileId}/version/${small.versionId}`,
    );
    expect(tokenOf(signed.url)).toMatch(/^sfsu_[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(signed.expires_at) - before).toBe(30_000);
  });

  it('accepts POST and GET, and the file/ and study_id/ spellings', async () => {
    for (const [method, path] of [
      ['GET', `/signed-url/study/${api.studyA}/files/${small.fileId}`],
      ['POST', `/signed-url/study/${api.studyA}/file/${small.fileId}`],
      ['POST', `/signed-url/study_id/${api.studyA}/file/${small.fileId}/version/${small.versionId}`],
    ]) {
      const res = await api.call(method, path, { token: api.memberA });
      expect(res.status, `${method} ${path}`).toBe(200);
      expect(res.body.url).toContain(`/version/${small.versionId}?token=sfsu_`);
    }
  });

  it('applies the download rules: 401 anonymous, 403 other studies (even unknown files), 404 unknown after auth', async () => {
    const path = `/signed-url/study/${api.studyA}/files/${small.fileId}`;
    expect((await api.call('POST', path, { token: null })).status).toBe(401);
    expect((await api.call('POST', path, { token: api.memberB })).status).toBe(403);
    const unknown = `/signed-url/study/${api.studyA}/files/SF_ZZZZZZZZ`;
    expect((await api.call('POST', unknown, { token: api.memberB })).status).toBe(403);
    expect((await api.call('POST', unknown, { token: api.memberA })).status).toBe(404);
    const mismatch = `/signed-url/study/${api.studyA}/files/${small.fileId}/version/${large.versionId}`;
    expect((await api.call('POST', mismatch, { token: api.memberA })).status).toBe(404);
  });

  it('stores only the SHA-256 of the token, with a TTL', async () => {
    const signed = await mint(small);
    const token = tokenOf(signed.url);
    const items = (await api.doc.send(new ScanCommand({ TableName: process.env.FILES_TABLE }))).Items ?? [];
    expect(JSON.stringify(items)).not.toContain(token);
    const stored = items.find((i) => i.pk === `SIGNED#${hashToken(token)}`);
    expect(stored).toMatchObject({ version_id: small.versionId, claimed: false });
    expect(stored!.ttl).toBe(Math.ceil(Date.parse(signed.expires_at) / 1000));
  });
});

describe('using a signed URL', () => {
  it('downloads without any header, exactly once', async () => {
    const signed = await mint(small);
    const first = await fetch(signed.url);
    expect(first.status).toBe(200);
    expect(Buffer.from(await first.arrayBuffer()).equals(smallBytes)).toBe(true);
    expect(first.headers.get('content-disposition')).toContain('small.csv');
    const second = await fetch(signed.url);
    expect(second.status).toBe(401);
    expect(second.headers.get('content-type')).toBe('application/json');
    expect(((await second.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
  });

  it('works as a plain browser link to a large file: it follows the redirect to S3', async () => {
    const signed = await mint(large);
    const res = await fetch(signed.url, { redirect: 'follow' });
    expect(res.status).toBe(200);
    expect(sha256(Buffer.from(await res.arrayBuffer()))).toBe(sha256(largeBytes));
  });

  it('lets exactly one of 100 concurrent claims through', async () => {
    const signed = await mint(large);
    const results = await Promise.all(
      Array.from({ length: 100 }, () => fetch(signed.url, { redirect: 'manual' }).then((r) => r.status)),
    );
    expect(results.filter((s) => s === 302)).toHaveLength(1);
    expect(results.filter((s) => s === 401)).toHaveLength(99);
  });

  it('expires after SIGNED_URL_TTL_SECONDS on the service clock', async () => {
    const fresh = await mint(small);
    api.clock.advance(29_999);
    expect((await fetch(fresh.url)).status).toBe(200);
    const stale = await mint(small);
    api.clock.advance(30_000);
    expect((await fetch(stale.url)).status).toBe(401);
  });

  it('refuses a forged token, and a real one used for another version, file or study, without spending it', async () => {
    const forged = `sfsu_${'x'.repeat(43)}`;
    const forgedUrl = `${api.baseUrl}/download/study/${api.studyA}/file/${small.fileId}/version/${small.versionId}?token=${forged}`;
    expect((await fetch(forgedUrl)).status).toBe(401);

    const signed = await mint(small);
    const token = tokenOf(signed.url);
    for (const path of [
      `/download/study/${api.studyA}/file/${large.fileId}/version/${large.versionId}`,
      `/download/study/${api.studyA}/file/${small.fileId}/version/${large.versionId}`,
      `/download/study/${api.studyB}/file/${small.fileId}/version/${small.versionId}`,
      `/download/study/${api.studyA}/file/${small.fileId}`,
    ]) {
      const res = await fetch(`${api.baseUrl}${path}?token=${token}`, { redirect: 'manual' });
      expect(res.status, path).toBe(401);
    }
    expect((await fetch(signed.url)).status).toBe(200);
  });

  it('does not spend a link on a HEAD request (it is answered, not claimed)', async () => {
    const signed = await mint(small);
    expect((await fetch(signed.url, { method: 'HEAD' })).status).toBe(200);
    expect((await fetch(signed.url)).status).toBe(200);
  });

  it('keeps pointing at the version it was minted for after a newer version is confirmed', async () => {
    const f = await api.upload(api.studyA, bytesOf(100, 1));
    const signed = await mint({ fileId: f.fileId });
    api.clock.advance(1000);
    await api.upload(api.studyA, bytesOf(100, 2), { fileId: f.fileId });
    const res = await fetch(signed.url);
    expect(Buffer.from(await res.arrayBuffer()).equals(bytesOf(100, 1))).toBe(true);
  });
});

describe('the token lifetime setting', () => {
  it('is taken from the configuration (here 120 s instead of 30 s)', async () => {
    const deps = { ...api.deps, config: { ...api.deps.config, SIGNED_URL_TTL_SECONDS: 120 } };
    const caller = { kind: 'user' as const, sub: 'admin-user', isAdmin: true, groups: [] };
    const signed = await mintSignedUrl(
      deps,
      { kind: 'caller', caller },
      { studyId: api.studyA, fileId: small.fileId },
      api.baseUrl,
      { sourceIp: null, userAgent: null },
    );
    expect(Date.parse(signed.expires_at) - api.clock.nowMs()).toBe(120_000);
    api.clock.advance(119_000);
    expect((await fetch(signed.url)).status).toBe(200);
  });
});

describe('metrics of signed URLs and downloads (embedded metric format)', () => {
  it('count a minted URL, its claim, and each download by method', async () => {
    const output = captureOutput();
    try {
      const signed = await mint({ fileId: small.fileId });
      const claimed = await fetch(signed.url, { redirect: 'manual' });
      expect(claimed.status).toBe(200);
      await claimed.arrayBuffer();
      const direct = await api.call('GET', `/download/study/${api.studyA}/file/${small.fileId}`, {
        token: api.memberA,
      });
      expect(direct.status).toBe(200);
      const named = (n: string) => output.points().filter((p) => p.name === n);
      expect(named('SignedUrlsMinted')).toEqual([expect.objectContaining({ unit: 'Count', value: 1 })]);
      expect(named('SignedUrlsClaimed')).toHaveLength(1);
      const methods = named('Downloads').map((p) => p.dimensions.Method);
      expect(methods).toHaveLength(2);
      expect(methods).toContain('signed_url');
      for (const p of output.points()) expect(p.dimensions.service).toBe('release-coordinator');
    } finally {
      output.stop();
    }
  });
});
