import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRS_BASE_PATH, expectDrsContract } from '#test/helpers/drs-contract.js';
import pkg from '../../../package.json' with { type: 'json' };
import {
  type ApiResponse,
  bytesOf,
  type CallOptions,
  type FilesApi,
  MiB,
  sha256,
  startFilesApi,
} from './harness.js';

/**
 * GA4GH DRS 1.5 on the files API, over real HTTP, DynamoDB Local and s3rver. Every DRS answer goes through
 * `expectDrsContract`: its status code must be one the official OpenAPI declares for the route, and its body must
 * validate against that response's schema.
 */
let api: FilesApi;
let host: string;
let small: { fileId: string; versionId: string };
let big: { fileId: string; versionId: string };
let other: { fileId: string; versionId: string };
let devToken: string;
const smallBytes = bytesOf(2048, 11);
// Above the harness's 6 MiB multipart threshold: the round trip covers a multipart upload too.
const bigBytes = bytesOf(7 * MiB + 5, 12);
const otherBytes = bytesOf(300, 13);

beforeAll(async () => {
  api = await startFilesApi();
  host = new URL(api.baseUrl).host;
  small = await api.upload(api.studyA, smallBytes, {
    fileName: 'genes.tsv',
    contentType: 'text/tab-separated-values',
  });
  big = await api.upload(api.studyA, bigBytes, { fileName: 'reads.bam', contentType: 'application/x-bam' });
  other = await api.upload(api.studyB, otherBytes, { fileName: 'other.txt', contentType: 'text/plain' });
  devToken = (await api.call('POST', '/developer-tokens', { body: { name: 'drs-client' } })).body.token;
});
afterAll(async () => {
  await api?.close();
});

/** A DRS call, checked against the official OpenAPI whatever it answers. */
async function drs(method: string, path: string, opts?: CallOptions): Promise<ApiResponse> {
  const res = await api.call(method, `${DRS_BASE_PATH}${path}`, opts);
  expectDrsContract(method, `${DRS_BASE_PATH}${path}`, res);
  return res;
}

const asCredential = (token: string | null): CallOptions =>
  token?.startsWith('sfdt_') ? { token: null, headers: { Authorization: `Token ${token}` } } : { token };

describe('service-info', () => {
  it('describes a DRS 1.5.0 service with its bulk limit and the count and size of its objects', async () => {
    const res = await drs('GET', '/service-info', { token: null });
    expect(res.status).toBe(200);
    expect(res.body.type).toEqual({ group: 'org.ga4gh', artifact: 'drs', version: '1.5.0' });
    expect(res.body).toMatchObject({
      id: 'org.kidsfirstdrc.study-files.drs',
      organization: { name: 'Kids First Data Resource Center', url: 'https://kidsfirstdrc.org' },
      version: pkg.version,
      maxBulkRequestLength: 200,
    });
    expect(res.body.drs).toMatchObject({
      maxBulkRequestLength: 200,
      objectCount: 3,
      totalObjectSize: smallBytes.length + bigBytes.length + otherBytes.length,
    });
  });
});

describe('a DRS object', () => {
  it('is an available version, with every field the mapping gives it', async () => {
    const res = await drs('GET', `/objects/${small.versionId}`, { token: api.memberA });
    expect(res.status).toBe(200);
    const version = (await api.call('GET', `/files/${small.fileId}/versions/${small.versionId}`)).body;
    expect(res.body).toEqual({
      id: small.versionId,
      name: 'genes.tsv',
      self_uri: `drs://${host}/${small.versionId}`,
      size: smallBytes.length,
      created_time: version.created_at,
      updated_time: version.confirmed_at,
      version: small.versionId,
      mime_type: 'text/tab-separated-values',
      checksums: [{ type: 'sha-256', checksum: sha256(smallBytes) }],
      access_methods: [
        {
          type: 'https',
          access_id: 'https',
          available: true,
          authorizations: { supported_types: ['BearerAuth'], bearer_auth_issuers: [api.idp.issuer] },
        },
      ],
      aliases: [small.fileId],
    });
  });

  it('carries the file description when the file has one, and answers POST with a body like GET', async () => {
    const created = await api.call('POST', `/studies/${api.studyA}/files`, {
      body: { file_name: 'd.txt', size: 3, sha256: sha256(Buffer.from('abc')), description: 'three letters' },
    });
    await fetch(created.body.upload.url, {
      method: 'PUT',
      body: 'abc',
      headers: created.body.upload.headers,
    });
    await api.call('POST', created.body.confirm_url, { body: {} });
    const versionId = created.body.version.kf_id;
    const got = await drs('GET', `/objects/${versionId}`);
    expect(got.body.description).toBe('three letters');
    const posted = await drs('POST', `/objects/${versionId}`, { body: { expand: false } });
    expect(posted.status).toBe(200);
    expect(posted.body).toEqual(got.body);
    const noBody = await drs('POST', `/objects/${versionId}`);
    expect(noBody.body).toEqual(got.body);
    await api.call('DELETE', `/files/${created.body.file.kf_id}`);
  });

  it('accepts ?expand, which has no bundle to expand, and refuses a value that is not a boolean', async () => {
    const plain = await drs('GET', `/objects/${small.versionId}`);
    for (const value of ['true', 'false']) {
      const res = await drs('GET', `/objects/${small.versionId}?expand=${value}`);
      expect(res.body).toEqual(plain.body);
      expect(res.body.contents).toBeUndefined();
    }
    const bad = await drs('GET', `/objects/${small.versionId}?expand=maybe`);
    expect(bad.status).toBe(400);
    expect(bad.body.status_code).toBe(400);
  });

  it('round-trips the bytes: object, then access URL, then the bytes from S3 with no header, then a SHA-256 match', async () => {
    for (const [f, bytes] of [
      [small, smallBytes],
      [big, bigBytes],
    ] as const) {
      const object = await drs('GET', `/objects/${f.versionId}`, { token: api.memberA });
      const [method] = object.body.access_methods;
      for (const verb of ['GET', 'POST']) {
        const access = await drs(verb, `/objects/${object.body.id}/access/${method.access_id}`, {
          token: api.memberA,
        });
        expect(access.status).toBe(200);
        // DRS's AccessURL needs no header; `expires_at` (when the URL stops working) is this service's addition.
        expect(Object.keys(access.body)).toEqual(['url', 'expires_at']);
        expect(access.headers.get('cache-control')).toBe('no-store');
        const fetched = await fetch(access.body.url);
        expect(fetched.status).toBe(200);
        const got = Buffer.from(await fetched.arrayBuffer());
        expect(got.length).toBe(object.body.size);
        expect(sha256(got)).toBe(object.body.checksums[0].checksum);
        expect(got.equals(bytes)).toBe(true);
      }
    }
  });

  it('is a presigned S3 GET that lives 5 minutes and a minute per 500 MB begun: expired on the service clock, S3 refuses it', async () => {
    const path = `/objects/${small.versionId}/access/https`;
    const answer = (await drs('GET', path, { token: api.memberA })).body;
    const fresh = new URL(answer.url);
    expect(fresh.origin).toBe(new URL(api.s3.env.AWS_ENDPOINT_URL_S3).origin);
    // 2 KB: the 5-minute base and one minute for the 500 MB begun; the answer says when it ends.
    expect(fresh.searchParams.get('X-Amz-Expires')).toBe('360');
    expect(Date.parse(answer.expires_at) - api.clock.nowMs()).toBe(360_000);
    const now = Date.now();
    try {
      // Minted 350 s ago: still valid. Minted 361 s ago: expired, and s3rver enforces presigned expiry.
      api.clock.set(now - 350_000);
      const young = (await drs('GET', path, { token: api.memberA })).body.url;
      expect((await fetch(young)).status).toBe(200);
      api.clock.set(now - 361_000);
      const old = (await drs('GET', path, { token: api.memberA })).body.url;
      const refused = await fetch(old);
      expect(refused.status).toBe(403);
      expect(await refused.text()).toContain('Request has expired');
    } finally {
      api.clock.set(now);
    }
  });

  it('answers a file id with its newest available version, which changes when a newer one is confirmed', async () => {
    const first = bytesOf(500, 21);
    const f = await api.upload(api.studyA, first);
    const before = await drs('GET', `/objects/${f.fileId}`);
    expect(before.body.id).toBe(f.versionId);
    expect(before.body.self_uri).toBe(`drs://${host}/${f.versionId}`);
    expect(before.body.aliases).toEqual([f.fileId]);

    // A newer upload that is not confirmed yet is not an object, and does not change what the file id names.
    api.clock.advance(1000);
    const second = bytesOf(600, 22);
    const pending = await api.call('POST', `/files/${f.fileId}/versions`, {
      body: { file_name: 'data.bin', size: second.length, sha256: sha256(second) },
    });
    const pendingId = pending.body.version.kf_id;
    expect((await drs('GET', `/objects/${pendingId}`)).status).toBe(404);
    expect((await drs('GET', `/objects/${pendingId}/access/https`)).status).toBe(404);
    expect((await drs('GET', `/objects/${f.fileId}`)).body.id).toBe(f.versionId);

    await fetch(pending.body.upload.url, {
      method: 'PUT',
      body: second,
      headers: pending.body.upload.headers,
    });
    await api.call('POST', pending.body.confirm_url, { body: {} });
    const after = await drs('GET', `/objects/${f.fileId}`);
    expect(after.body.id).toBe(pendingId);
    expect(after.body.checksums[0].checksum).toBe(sha256(second));
    const url = (await drs('GET', `/objects/${f.fileId}/access/https`)).body.url;
    expect(Buffer.from(await (await fetch(url)).arrayBuffer()).equals(second)).toBe(true);
    // The version id keeps naming the first bytes.
    expect((await drs('GET', `/objects/${f.versionId}`)).body.checksums[0].checksum).toBe(sha256(first));
    await api.call('DELETE', `/files/${f.fileId}`);
  });

  it('resolves a hostname-based drs:// URI given as the id when its host is this service, and only then', async () => {
    const self = (await drs('GET', `/objects/${small.versionId}`)).body.self_uri;
    const viaUri = await drs('GET', `/objects/${encodeURIComponent(self)}`);
    expect(viaUri.status).toBe(200);
    expect(viaUri.body.id).toBe(small.versionId);
    const access = await drs('GET', `/objects/${encodeURIComponent(self)}/access/https`);
    expect(access.status).toBe(200);
    for (const uri of [
      `drs://drs.elsewhere.example/${small.versionId}`,
      `drs://${new URL(api.baseUrl).hostname}:1/${small.versionId}`,
      `drs://${host}/SF_ZZZZZZZZ`,
    ]) {
      const res = await drs('GET', `/objects/${encodeURIComponent(uri)}`);
      expect(res.status, uri).toBe(404);
    }
  });

  it('answers the same 404 for unknown ids, malformed ids and unknown access ids', async () => {
    for (const id of ['FV_ZZZZZZZZ', 'SF_ZZZZZZZZ', 'nonsense', 'fv_' + small.versionId.slice(3)]) {
      const res = await drs('GET', `/objects/${encodeURIComponent(id)}`);
      expect(res.status, id).toBe(404);
      expect(res.body).toEqual({ msg: `No DRS object ${id}`, status_code: 404 });
    }
    const access = await drs('GET', `/objects/${small.versionId}/access/s3`);
    expect(access.status).toBe(404);
    expect(access.body).toEqual({
      msg: `DRS object ${small.versionId} has no access method s3`,
      status_code: 404,
    });
    // A malformed percent-escape names nothing either: the same 404 as any unknown path id.
    const malformed = await api.call('GET', `${DRS_BASE_PATH}/objects/%zz`);
    expect(malformed.status).toBe(404);
    expect(malformed.body).toEqual({ msg: 'No such resource', status_code: 404 });
  });
});

describe('authorization', () => {
  it('applies the downloads’ matrix: admin all, member own studies, developer tokens all, anonymous 401', async () => {
    const revoked = (await api.call('POST', '/developer-tokens', { body: { name: 'revoked' } })).body.token;
    await api.call('DELETE', '/developer-tokens/revoked');
    const minted = await api.call('POST', `/signed-url/study/${api.studyA}/files/${small.fileId}`);
    const signedToken = new URL(minted.body.url).searchParams.get('token')!;
    const expired = api.idp.mint({ sub: 'member-a', groups: [api.studyA], expiresIn: -60 });

    /** Expected outcome, credential, and a query string that carries the credential instead. */
    type Who = [string, CallOptions, string?];
    const callers: Record<string, Who> = {
      admin: ['ok', asCredential(api.admin)],
      member: ['ok', asCredential(api.memberA)],
      'developer token (Token)': ['ok', asCredential(devToken)],
      'developer token (Bearer)': ['ok', { token: devToken }],
      'developer token (?token=)': ['ok', { token: null }, `token=${devToken}`],
      'member of another study': ['hidden', asCredential(api.memberB)],
      'member of no study': ['hidden', asCredential(api.outsider)],
      anonymous: ['401', { token: null }],
      'expired JWT': ['401', { token: expired }],
      'revoked developer token': ['401', asCredential(revoked)],
      'revoked developer token (Bearer)': ['401', { token: revoked }],
      'signed-URL token': ['401', { token: null, headers: { Authorization: `Token ${signedToken}` } }],
    };
    const routes: [string, string][] = [
      ['GET', `/objects/${small.versionId}`],
      ['POST', `/objects/${small.versionId}`],
      ['GET', `/objects/${small.fileId}`],
      ['GET', `/objects/${small.versionId}/access/https`],
      ['POST', `/objects/${small.versionId}/access/https`],
    ];
    for (const [method, path] of routes) {
      for (const [who, [expected, opts, query]] of Object.entries(callers)) {
        const res = await drs(method, query ? `${path}?${query}` : path, opts);
        const label = `${who}: ${method} ${path}`;
        if (expected === 'ok') expect(res.status, label).toBe(200);
        if (expected === '401') {
          expect(res.status, label).toBe(401);
          expect(res.headers.get('www-authenticate'), label).toBe('Bearer');
          expect(res.body.status_code, label).toBe(401);
        }
        if (expected === 'hidden') {
          // Exactly what an id that does not exist answers: a non-member learns nothing.
          const unknownPath = path
            .replace(small.versionId, 'FV_ZZZZZZZZ')
            .replace(small.fileId, 'SF_ZZZZZZZZ');
          const unknown = await drs(method, query ? `${unknownPath}?${query}` : unknownPath, opts);
          expect(res.status, label).toBe(404);
          expect(unknown.status, label).toBe(404);
          const idOf = (p: string) => p.split('/')[2];
          expect(res.body.msg.replace(idOf(path), '<id>'), label).toBe(
            unknown.body.msg.replace(idOf(unknownPath), '<id>'),
          );
        }
      }
    }
  });

  it('lets a member of study B read B’s objects and nobody else’s', async () => {
    expect((await drs('GET', `/objects/${other.versionId}`, { token: api.memberB })).status).toBe(200);
    expect((await drs('GET', `/objects/${other.versionId}`, { token: api.memberA })).status).toBe(404);
  });

  it('checks the credential before anything else, even for ids that cannot exist', async () => {
    for (const path of ['/objects/FV_ZZZZZZZZ', '/objects/nonsense', '/objects/nonsense/access/https']) {
      const res = await drs('GET', path, { token: null });
      expect(res.status, path).toBe(401);
    }
  });

  it('does not take passports: a request with only passports is anonymous (401), a token with them works', async () => {
    const onlyPassports = await drs('POST', `/objects/${small.versionId}`, {
      token: null,
      body: { passports: ['eyJhbGciOiJIUzI1NiJ9.e30.sig'] },
    });
    expect(onlyPassports.status).toBe(401);
    expect(onlyPassports.body.msg).toContain('Passports are not supported');
    const withToken = await drs('POST', `/objects/${small.versionId}/access/https`, {
      token: api.memberA,
      body: { passports: ['eyJhbGciOiJIUzI1NiJ9.e30.sig'] },
    });
    expect(withToken.status).toBe(200);
  });

  it('answers OPTIONS with the authorizations, to anyone, for any id this service could hold', async () => {
    for (const id of [small.versionId, small.fileId, 'FV_ZZZZZZZZ']) {
      const res = await drs('OPTIONS', `/objects/${id}`, { token: null });
      expect(res.status, id).toBe(200);
      expect(res.body).toEqual({
        drs_object_id: id,
        supported_types: ['BearerAuth'],
        bearer_auth_issuers: [api.idp.issuer],
      });
    }
    expect((await drs('OPTIONS', '/objects/nonsense', { token: null })).status).toBe(404);
    const bulk = await drs('OPTIONS', '/objects', { token: null });
    expect(bulk.status).toBe(200);
    expect(bulk.body).toEqual({ supported_types: ['BearerAuth'], bearer_auth_issuers: [api.idp.issuer] });
  });
});

describe('the audit trail', () => {
  it('records every access URL handed out with method drs, who asked and which version', async () => {
    const f = await api.upload(api.studyA, bytesOf(64, 31));
    api.clock.advance(1000);
    await drs('GET', `/objects/${f.versionId}`, { token: api.memberA });
    await drs('GET', `/objects/${f.versionId}/access/https`, {
      token: api.memberA,
      headers: { 'User-Agent': 'drs-client/1.0' },
    });
    api.clock.advance(1000);
    await drs('POST', `/objects/${f.fileId}/access/https`, asCredential(devToken));
    api.clock.advance(1000);
    await drs('POST', '/objects/access', {
      body: { bulk_object_access_ids: [{ bulk_object_id: f.versionId, bulk_access_ids: ['https'] }] },
    });
    const audit = await api.call('GET', `/audit?file=${f.fileId}`);
    const rows = audit.body.results.map((r: Record<string, unknown>) => [
      r.action,
      r.method,
      r.actor,
      r.dev_token,
      r.version_id,
    ]);
    // Newest first; reading the object itself hands out no URL and is not a download.
    expect(rows.slice(0, 3)).toEqual([
      ['download', 'drs', 'admin-user', null, f.versionId],
      ['download', 'drs', null, 'drs-client', f.versionId],
      ['download', 'drs', 'member-a', null, f.versionId],
    ]);
    expect(audit.body.results[2].user_agent).toBe('drs-client/1.0');
    expect(rows.filter((r: unknown[]) => r[1] === 'drs')).toHaveLength(3);
  });
});

describe('the object count', () => {
  it('follows versions becoming available and being deleted, and ignores pending and failed uploads', async () => {
    const count = async () => (await drs('GET', '/service-info', { token: null })).body.drs;
    const start = await count();

    const bytes = bytesOf(1000, 41);
    const f = await api.upload(api.studyA, bytes);
    expect(await count()).toMatchObject({
      objectCount: start.objectCount + 1,
      totalObjectSize: start.totalObjectSize + 1000,
    });

    // Pending: not counted.
    const pending = await api.call('POST', `/files/${f.fileId}/versions`, {
      body: { file_name: 'p.bin', size: 10, sha256: sha256(bytesOf(10, 42)) },
    });
    expect((await count()).objectCount).toBe(start.objectCount + 1);
    // Failed (the stored bytes do not match the declared SHA-256): not counted.
    const failing = await api.call('POST', `/files/${f.fileId}/versions`, {
      body: { file_name: 'f.bin', size: 10, sha256: sha256(bytesOf(10, 43)) },
    });
    await fetch(failing.body.upload.url, {
      method: 'PUT',
      body: bytesOf(10, 44),
      headers: failing.body.upload.headers,
    });
    expect((await api.call('POST', failing.body.confirm_url, { body: {} })).status).toBe(422);
    expect((await count()).objectCount).toBe(start.objectCount + 1);

    // A second available version, then deleting one version, then the whole file.
    const second = await api.upload(api.studyA, bytesOf(24, 45), { fileId: f.fileId });
    expect((await count()).objectCount).toBe(start.objectCount + 2);
    expect((await api.call('DELETE', `/files/${f.fileId}/versions/${second.versionId}`)).status).toBe(200);
    expect((await drs('GET', `/objects/${second.versionId}`)).status).toBe(404);
    expect(await count()).toMatchObject({
      objectCount: start.objectCount + 1,
      totalObjectSize: start.totalObjectSize + 1000,
    });
    expect(
      (await api.call('DELETE', `/files/${f.fileId}/versions/${pending.body.version.kf_id}`)).status,
    ).toBe(200);
    expect((await count()).objectCount).toBe(start.objectCount + 1);
    expect((await api.call('DELETE', `/files/${f.fileId}`)).status).toBe(200);
    expect(await count()).toEqual(start);
    expect((await drs('GET', `/objects/${f.versionId}`)).status).toBe(404);
  });
});

describe('a multipart upload', () => {
  it('is no object while the worker verifies it, and one (counted) once it is available', async () => {
    const count = async () => (await drs('GET', '/service-info', { token: null })).body.drs;
    const start = await count();
    const bytes = bytesOf(7 * MiB, 46);
    // The worker is held, so the version stays `verifying` for as long as the test looks at it.
    api.lambda.pause();
    let fileId: string;
    let versionId: string;
    try {
      const created = await api.call('POST', `/studies/${api.studyA}/files`, {
        body: { file_name: 'verifying.bin', size: bytes.length, sha256: sha256(bytes) },
      });
      expect(created.body.upload.type).toBe('multipart');
      const { upload } = created.body;
      fileId = created.body.file.kf_id;
      versionId = created.body.version.kf_id;
      const parts = [];
      for (const p of upload.parts) {
        const chunk = bytes.subarray(
          (p.part_number - 1) * upload.part_size,
          p.part_number * upload.part_size,
        );
        const put = await fetch(p.url, { method: 'PUT', body: chunk });
        parts.push({ part_number: p.part_number, etag: put.headers.get('etag') });
      }
      const confirmed = await api.call('POST', `/files/${fileId}/versions/${versionId}/confirm`, {
        body: { parts },
      });
      expect(confirmed.status).toBe(202);
      expect(confirmed.body.state).toBe('verifying');
      for (const path of [
        `/objects/${versionId}`,
        `/objects/${fileId}`,
        `/objects/${versionId}/access/https`,
      ]) {
        const res = await drs('GET', path);
        expect(res.status, path).toBe(404);
        expect(res.body.status_code, path).toBe(404);
      }
      const bulk = await drs('POST', '/objects', { body: { bulk_object_ids: [versionId] } });
      expect(bulk.body.unresolved_drs_objects).toEqual([{ error_code: 404, object_ids: [versionId] }]);
      expect(await count()).toEqual(start);
    } finally {
      api.lambda.resume();
    }
    const done = await api.waitForVersion(fileId, versionId, (v) => v.state !== 'verifying');
    expect(done.state).toBe('available');
    const object = await drs('GET', `/objects/${versionId}`);
    expect(object.status).toBe(200);
    expect(object.body.checksums).toEqual([{ type: 'sha-256', checksum: sha256(bytes) }]);
    expect((await drs('GET', `/objects/${fileId}`)).body.id).toBe(versionId);
    expect(await count()).toMatchObject({
      objectCount: start.objectCount + 1,
      totalObjectSize: start.totalObjectSize + bytes.length,
    });
    expect((await api.call('DELETE', `/files/${fileId}`)).status).toBe(200);
    expect(await count()).toMatchObject(start);
  });
});

describe('errors', () => {
  it('have DRS’s body {msg, status_code} on DRS routes only', async () => {
    const missing = await drs('GET', '/objects/FV_ZZZZZZZZ');
    expect(missing.body).toEqual({ msg: 'No DRS object FV_ZZZZZZZZ', status_code: 404 });
    const anonymous = await drs('GET', `/objects/${small.versionId}`, { token: null });
    expect(anonymous.body).toEqual({
      msg: 'Authentication credentials were not provided or are invalid',
      status_code: 401,
    });
    const unknownField = await drs('POST', `/objects/${small.versionId}`, {
      body: { expand: true, colour: 'red' },
    });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.msg).toContain('unknown field(s): colour');
    const notJson = await drs('POST', `/objects/${small.versionId}`, {
      body: '{not json',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(notJson.status).toBe(400);
    expect(notJson.body).toEqual({ msg: 'Request body is not valid JSON', status_code: 400 });
    // Outside DRS, the project's own error body.
    const rest = await api.call('GET', '/files/SF_ZZZZZZZZ');
    expect(rest.body.error.code).toBe('not_found');
  });

  it('answers 405 with Allow for a method a DRS path does not have', async () => {
    const res = await api.call('DELETE', `${DRS_BASE_PATH}/objects/${small.versionId}`);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST, OPTIONS');
    expect(res.body).toEqual({ msg: 'Method "DELETE" not allowed', status_code: 405 });
  });
});
