import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesOf, type FilesApi, MiB, sha256, startFilesApi } from './harness.js';

const run = promisify(execFile);

let api: FilesApi;
let small: { fileId: string; versionId: string };
let large: { fileId: string; versionId: string };
let other: { fileId: string; versionId: string };
let devToken: string;
const smallBytes = bytesOf(2048, 42);
const largeBytes = bytesOf(9 * MiB + 123, 43);

beforeAll(async () => {
  api = await startFilesApi();
  small = await api.upload(api.studyA, smallBytes, { fileName: 'notes été.txt', contentType: 'text/plain' });
  large = await api.upload(api.studyA, largeBytes, {
    fileName: 'reads.bam',
    contentType: 'application/x-bam',
  });
  other = await api.upload(api.studyB, bytesOf(100, 44));
  devToken = (await api.call('POST', '/developer-tokens', { body: { name: 'ci' } })).body.token;
});
afterAll(async () => {
  await api?.close();
});

const downloadPath = (studyId: string, f: { fileId: string; versionId?: string }, pinned = true) =>
  `/download/study/${studyId}/file/${f.fileId}${pinned && f.versionId ? `/version/${f.versionId}` : ''}`;

describe('who may download', () => {
  it('applies the role × route matrix: 401 without a token, 403 for other studies (404 on routes by file id), 200/302 for members and admins', async () => {
    const roles = {
      anonymous: null,
      outsider: api.outsider,
      'member of another study': api.memberB,
      member: api.memberA,
      admin: api.admin,
    };
    const expected: Record<keyof typeof roles, number> = {
      anonymous: 401,
      outsider: 403,
      'member of another study': 403,
      member: 200,
      admin: 200,
    };
    const routes: [string, string, number][] = [
      ['GET', downloadPath(api.studyA, small, false), 200],
      ['GET', downloadPath(api.studyA, small), 200],
      ['GET', downloadPath(api.studyA, large), 302],
      ['POST', `/signed-url/study/${api.studyA}/files/${small.fileId}`, 200],
      ['GET', `/signed-url/study/${api.studyA}/files/${small.fileId}/version/${small.versionId}`, 200],
      ['GET', `/studies/${api.studyA}/files`, 200],
      ['GET', `/files/${small.fileId}`, 200],
      ['GET', `/files/${small.fileId}/versions`, 200],
      ['GET', `/files/${small.fileId}/versions/${small.versionId}`, 200],
    ];
    for (const [method, path, success] of routes) {
      for (const [role, token] of Object.entries(roles) as [keyof typeof roles, string | null][]) {
        const res = await api.call(method, path, { token });
        // A route that finds the record by its own id answers a caller who may not see it as for an unknown id.
        const byId = path.startsWith('/files/') && expected[role] === 403;
        const want = expected[role] === 200 ? success : byId ? 404 : expected[role];
        expect(res.status, `${role} ${method} ${path}`).toBe(want);
        if (want >= 400) {
          expect(res.headers.get('content-type')).toBe('application/json');
          expect(res.body.error.code).toBe(
            want === 401 ? 'unauthorized' : want === 404 ? 'not_found' : 'forbidden',
          );
        }
        if (want === 401) expect(res.headers.get('www-authenticate')).toBe('Bearer');
      }
    }
  });

  it('checks membership before any lookup, and answers 404 for unknown ids only after authentication', async () => {
    const unknownFile = `/download/study/${api.studyA}/file/SF_ZZZZZZZZ`;
    expect((await api.call('GET', unknownFile, { token: null })).status).toBe(401);
    expect((await api.call('GET', unknownFile, { token: api.memberB })).status).toBe(403);
    expect((await api.call('GET', unknownFile, { token: api.outsider })).status).toBe(403);
    const notFound = await api.call('GET', unknownFile, { token: api.memberA });
    expect(notFound.status).toBe(404);
    expect(notFound.body.error.code).toBe('not_found');
    expect((await api.call('GET', unknownFile, { token: api.admin })).status).toBe(404);
    const unknownVersion = `/download/study/${api.studyA}/file/${small.fileId}/version/FV_ZZZZZZZZ`;
    expect((await api.call('GET', unknownVersion, { token: null })).status).toBe(401);
    expect((await api.call('GET', unknownVersion, { token: api.memberA })).status).toBe(404);
  });

  it('answers 404 for a version of another file and for a study that does not match the path', async () => {
    const wrongFile = `/download/study/${api.studyA}/file/${small.fileId}/version/${large.versionId}`;
    expect((await api.call('GET', wrongFile)).status).toBe(404);
    const wrongStudy = `/download/study/${api.studyB}/file/${small.fileId}`;
    expect((await api.call('GET', wrongStudy)).status).toBe(404);
    // A member of A asking under study B's path is refused before the lookup, as for any other study.
    expect((await api.call('GET', wrongStudy, { token: api.memberA })).status).toBe(403);
    const wrongStudyVersion = `/download/study/${api.studyA}/file/${other.fileId}/version/${other.versionId}`;
    expect((await api.call('GET', wrongStudyVersion)).status).toBe(404);
  });

  it('rejects expired, forged and wrongly addressed JWTs with 401', async () => {
    const expired = api.idp.mint({ sub: 'member-a', groups: [api.studyA], expiresIn: -60 });
    const wrongAudience = api.idp.mint({ sub: 'member-a', groups: [api.studyA], audience: 'someone-else' });
    for (const token of [expired, wrongAudience, 'not.a.jwt']) {
      const res = await api.call('GET', downloadPath(api.studyA, small), { token });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
    }
  });
});

describe('direct download', () => {
  it('returns a small object directly, with its content type and file name', async () => {
    const res = await api.call('GET', downloadPath(api.studyA, small), { token: api.memberA });
    expect(res.status).toBe(200);
    expect(res.bytes.equals(smallBytes)).toBe(true);
    expect(res.headers.get('content-type')).toBe('text/plain');
    expect(res.headers.get('content-disposition')).toBe(
      `attachment; filename="notes _t_.txt"; filename*=UTF-8''notes%20%C3%A9t%C3%A9.txt`,
    );
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('redirects a large object to a presigned S3 GET that lives 5 minutes and a minute per 500 MB, and names the file', async () => {
    const res = await api.call('GET', downloadPath(api.studyA, large), { token: api.memberA });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(location.origin).toBe(new URL(api.s3.env.AWS_ENDPOINT_URL_S3).origin);
    expect(location.searchParams.get('X-Amz-Expires')).toBe('360');
    expect(location.searchParams.get('response-content-disposition')).toBe(
      `attachment; filename="reads.bam"; filename*=UTF-8''reads.bam`,
    );
    expect(location.searchParams.get('response-content-type')).toBe('application/x-bam');
    const ranged = await fetch(location, { headers: { Range: 'bytes=10-19' } });
    expect(ranged.status).toBe(206);
    expect(Buffer.from(await ranged.arrayBuffer()).equals(largeBytes.subarray(10, 20))).toBe(true);
  });

  it('round-trips a multi-MiB file byte for byte when the client follows the redirect', async () => {
    const res = await api.call('GET', downloadPath(api.studyA, large, false), {
      token: api.memberA,
      redirect: 'follow',
    });
    expect(res.status).toBe(200);
    expect(res.bytes.length).toBe(largeBytes.length);
    expect(sha256(res.bytes)).toBe(sha256(largeBytes));
    expect(res.headers.get('content-disposition')).toContain("filename*=UTF-8''reads.bam");
  });

  it('works with `curl -L -H "Authorization: Bearer …" URL -o out`', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'curl-'));
    try {
      const out = join(dir, 'out');
      const url = `${api.baseUrl}${downloadPath(api.studyA, large, false)}`;
      const { stdout } = await run('curl', [
        '-sS',
        '-L',
        '-H',
        `Authorization: Bearer ${api.memberA}`,
        url,
        '-o',
        out,
        '-w',
        '%{http_code} %{num_redirects}',
      ]);
      expect(stdout).toBe('200 1');
      expect(sha256(readFileSync(out))).toBe(sha256(largeBytes));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('accepts the study_id/ and files/ spellings of the path', async () => {
    for (const path of [
      `/download/study_id/${api.studyA}/file/${small.fileId}`,
      `/download/study_id/${api.studyA}/file/${small.fileId}/version/${small.versionId}`,
      `/download/study/${api.studyA}/files/${small.fileId}`,
      `/download/study_id/${api.studyA}/files/${small.fileId}/version/${small.versionId}`,
    ]) {
      const res = await api.call('GET', path, { token: api.memberA });
      expect(res.status, path).toBe(200);
      expect(res.bytes.equals(smallBytes)).toBe(true);
    }
  });
});

describe('developer tokens on downloads', () => {
  it('download any file with ?token= or Authorization: Token', async () => {
    const viaQuery = await api.call('GET', `${downloadPath(api.studyB, other)}?token=${devToken}`, {
      token: null,
    });
    expect(viaQuery.status).toBe(200);
    const viaHeader = await api.call('GET', downloadPath(api.studyA, small), {
      token: null,
      headers: { Authorization: `Token ${devToken}` },
    });
    expect(viaHeader.status).toBe(200);
    expect(viaHeader.bytes.equals(smallBytes)).toBe(true);
    const unknownFile = await api.call(
      'GET',
      `/download/study/${api.studyA}/file/SF_ZZZZZZZZ?token=${devToken}`,
      {
        token: null,
      },
    );
    expect(unknownFile.status).toBe(404);
  });

  it('refuses unknown tokens of either prefix and tokens of no known kind with 401', async () => {
    for (const token of [`sfdt_${'A'.repeat(43)}`, `sfsu_${'A'.repeat(43)}`, 'abcabc']) {
      const res = await api.call('GET', `${downloadPath(api.studyA, small)}?token=${token}`, { token: null });
      expect(res.status, token).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
      const header = await api.call('GET', downloadPath(api.studyA, small), {
        token: null,
        headers: { Authorization: `Token ${token}` },
      });
      expect(header.status).toBe(401);
    }
  });
});

describe('the audit trail', () => {
  it('records who downloaded which version, how and when; admins query it by study and file', async () => {
    const f = await api.upload(api.studyA, bytesOf(300, 77));
    api.clock.advance(1000);
    await api.call('GET', downloadPath(api.studyA, f), {
      token: api.memberA,
      // The last entry is the one API Gateway appends; the first is whatever the client claimed.
      headers: { 'User-Agent': 'audit-test', 'X-Forwarded-For': '198.51.100.1, 203.0.113.9' },
    });
    api.clock.advance(1000);
    await api.call('GET', `${downloadPath(api.studyA, f)}?token=${devToken}`, { token: null });
    api.clock.advance(1000);
    const minted = await api.call('POST', `/signed-url/study/${api.studyA}/files/${f.fileId}`, {
      token: api.memberA,
    });
    api.clock.advance(1000);
    await fetch(minted.body.url);

    const audit = await api.call('GET', `/audit?study=${api.studyA}&file=${f.fileId}`);
    expect(audit.status).toBe(200);
    const rows = audit.body.results.map((r: Record<string, unknown>) => [
      r.action,
      r.method,
      r.actor,
      r.dev_token,
    ]);
    expect(rows.slice(0, 4)).toEqual([
      ['download', 'signed_url', 'member-a', null],
      ['signed_url.create', 'bearer', 'member-a', null],
      ['download', 'developer_token', null, 'ci'],
      ['download', 'bearer', 'member-a', null],
    ]);
    expect(audit.body.results[3]).toMatchObject({
      study_id: api.studyA,
      file_id: f.fileId,
      version_id: f.versionId,
      user_agent: 'audit-test',
      source_ip: '203.0.113.9',
    });
    expect(audit.body.results[0].at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

    const byUser = await api.call('GET', `/audit?file=${f.fileId}&user=member-a&limit=2`);
    expect(byUser.body.count).toBe(3);
    expect(byUser.body.results).toHaveLength(2);
    expect(byUser.body.next).toContain('user=member-a');
    const byStudy = await api.call('GET', `/audit?study=${api.studyA}`);
    expect(byStudy.body.count).toBeGreaterThan(4);
    const all = await api.call('GET', '/audit');
    expect(all.body.count).toBeGreaterThan(byStudy.body.count);

    expect((await api.call('GET', '/audit', { token: api.memberA })).status).toBe(403);
    expect((await api.call('GET', '/audit', { token: null })).status).toBe(401);
    expect((await api.call('GET', '/audit?study=nope')).status).toBe(400);
  });
});
