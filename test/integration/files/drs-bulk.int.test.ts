import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRS_BASE_PATH, expectDrsContract } from '#test/helpers/drs-contract.js';
import {
  type ApiResponse,
  bytesOf,
  type CallOptions,
  type FilesApi,
  sha256,
  startFilesApi,
} from './harness.js';

/**
 * The bulk DRS routes (POST /objects, POST /objects/access, OPTIONS /objects), with maxBulkRequestLength lowered to
 * 5 so that "one over the limit" is cheap to send. Every answer is checked against the official OpenAPI.
 */
const MAX = 5;
let api: FilesApi;
let a1: { fileId: string; versionId: string };
let a2: { fileId: string; versionId: string };
let b1: { fileId: string; versionId: string };
const bytesA1 = bytesOf(700, 51);
const bytesA2 = bytesOf(800, 52);

beforeAll(async () => {
  api = await startFilesApi({ DRS_MAX_BULK_REQUEST_LENGTH: String(MAX) });
  a1 = await api.upload(api.studyA, bytesA1, { fileName: 'a1.txt', contentType: 'text/plain' });
  a2 = await api.upload(api.studyA, bytesA2, { fileName: 'a2.txt', contentType: 'text/plain' });
  b1 = await api.upload(api.studyB, bytesOf(900, 53));
});
afterAll(async () => {
  // The setting stays out of the test files that run next in this worker.
  delete process.env.DRS_MAX_BULK_REQUEST_LENGTH;
  await api?.close();
});

async function drs(method: string, path: string, opts?: CallOptions): Promise<ApiResponse> {
  const res = await api.call(method, `${DRS_BASE_PATH}${path}`, opts);
  expectDrsContract(method, `${DRS_BASE_PATH}${path}`, res);
  return res;
}

/** `unresolved_drs_objects` as a map from status code to ids, for order-free comparison. */
function unresolvedOf(body: { unresolved_drs_objects: { error_code: number; object_ids: string[] }[] }) {
  return Object.fromEntries(body.unresolved_drs_objects.map((u) => [u.error_code, [...u.object_ids].sort()]));
}

describe('POST /objects', () => {
  it('resolves what the caller may read and reports unknown, forbidden and malformed ids alike, as 404', async () => {
    const ids = [a1.versionId, 'FV_ZZZZZZZZ', b1.versionId, 'not-an-id', a2.fileId];
    const res = await drs('POST', '/objects', { token: api.memberA, body: { bulk_object_ids: ids } });
    expect(res.status).toBe(200);
    expect(res.body.summary).toEqual({ requested: 5, resolved: 2, unresolved: 3 });
    expect(res.body.resolved_drs_object.map((o: { id: string }) => o.id).sort()).toEqual(
      [a1.versionId, a2.versionId].sort(),
    );
    const single = await drs('GET', `/objects/${a1.versionId}`, { token: api.memberA });
    expect(res.body.resolved_drs_object.find((o: { id: string }) => o.id === a1.versionId)).toEqual(
      single.body,
    );
    // The forbidden id is indistinguishable from the unknown one.
    expect(unresolvedOf(res.body)).toEqual({ 404: ['FV_ZZZZZZZZ', b1.versionId, 'not-an-id'].sort() });
    expect(res.body.unresolved).toEqual(res.body.unresolved_drs_objects);
  });

  it('resolves everything for an admin, and a repeated id once', async () => {
    const res = await drs('POST', '/objects?expand=false', {
      body: { bulk_object_ids: [a1.versionId, b1.versionId, a1.versionId] },
    });
    expect(res.body.summary).toEqual({ requested: 2, resolved: 2, unresolved: 0 });
    expect(res.body.unresolved_drs_objects).toEqual([]);
  });

  it(`takes up to maxBulkRequestLength (${MAX}) ids and answers one more with 413`, async () => {
    const ids = (n: number) => Array.from({ length: n }, (_, i) => (i % 2 ? a1.versionId : `FV_ZZZZZZZ${i}`));
    const atLimit = await drs('POST', '/objects', { body: { bulk_object_ids: ids(MAX) } });
    expect(atLimit.status).toBe(200);
    const over = await drs('POST', '/objects', { body: { bulk_object_ids: ids(MAX + 1) } });
    expect(over.status).toBe(413);
    expect(over.body).toEqual({
      msg: `The bulk request names ${MAX + 1} items; at most ${MAX} are accepted`,
      status_code: 413,
    });
    const info = await drs('GET', '/service-info', { token: null });
    expect(info.body.drs.maxBulkRequestLength).toBe(MAX);
    expect(info.body.maxBulkRequestLength).toBe(MAX);
  });

  it('needs a credential first, and a body that names the ids', async () => {
    const anonymous = await drs('POST', '/objects', {
      token: null,
      body: { bulk_object_ids: [a1.versionId] },
    });
    expect(anonymous.status).toBe(401);
    const onlyPassports = await drs('POST', '/objects', {
      token: null,
      body: { bulk_object_ids: [a1.versionId], passports: ['eyJhbGciOiJIUzI1NiJ9.e30.sig'] },
    });
    expect(onlyPassports.status).toBe(401);
    expect(onlyPassports.body.msg).toContain('Passports are not supported');
    const missing = await drs('POST', '/objects', { body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toContain('bulk_object_ids');
  });

  it('bounds every field of a bulk body (400 naming it) and the body itself (256 KiB), in DRS’s error body', async () => {
    const longId = await drs('POST', '/objects', {
      body: { bulk_object_ids: [a1.versionId, `drs://${'h'.repeat(520)}/${a1.versionId}`] },
    });
    expect(longId.status).toBe(400);
    expect(longId.body.msg).toContain('bulk_object_ids.1: must be at most 512 characters');
    const passports = await drs('POST', '/objects', {
      body: { bulk_object_ids: [a1.versionId], passports: Array(11).fill('eyJhbGciOiJIUzI1NiJ9.e30.sig') },
    });
    expect(passports.status).toBe(400);
    expect(passports.body.msg).toContain('passports: must have at most 10 items');
    const longAccessId = await drs('POST', '/objects/access', {
      body: {
        bulk_object_access_ids: [{ bulk_object_id: a1.versionId, bulk_access_ids: ['x'.repeat(101)] }],
      },
    });
    expect(longAccessId.status).toBe(400);
    expect(longAccessId.body.msg).toContain('bulk_access_ids');
    // Over the body limit: refused before the ids are counted, naming the field that makes it large.
    const huge = await drs('POST', '/objects', {
      body: { bulk_object_ids: Array.from({ length: 30_000 }, () => 'FV_ZZZZZZZZ') },
    });
    expect(huge.status).toBe(400);
    expect(huge.body.msg).toContain('Invalid bulk_object_ids: too large');
    expect(huge.body.status_code).toBe(400);
  });
});

describe('POST /objects/access', () => {
  it('hands out a working URL per readable object and reports the others with their status codes', async () => {
    const res = await drs('POST', '/objects/access', {
      token: api.memberA,
      body: {
        bulk_object_access_ids: [
          { bulk_object_id: a1.versionId, bulk_access_ids: ['https'] },
          { bulk_object_id: a2.fileId },
          { bulk_object_id: b1.versionId, bulk_access_ids: ['https'] },
          { bulk_object_id: 'FV_ZZZZZZZZ', bulk_access_ids: ['https'] },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.summary).toEqual({ requested: 4, resolved: 2, unresolved: 2 });
    expect(unresolvedOf(res.body)).toEqual({ 404: ['FV_ZZZZZZZZ', b1.versionId].sort() });
    const urls = res.body.resolved_drs_object_access_urls as {
      drs_object_id: string;
      drs_access_id: string;
      url: string;
    }[];
    expect(urls.map((u) => [u.drs_object_id, u.drs_access_id])).toEqual([
      [a1.versionId, 'https'],
      [a2.fileId, 'https'],
    ]);
    for (const [u, bytes] of [
      [urls[0], bytesA1],
      [urls[1], bytesA2],
    ] as const) {
      const got = Buffer.from(await (await fetch(u.url)).arrayBuffer());
      expect(sha256(got)).toBe(sha256(bytes));
    }
    const audit = await api.call('GET', `/audit?file=${a1.fileId}&user=member-a`);
    expect(audit.body.results[0]).toMatchObject({
      action: 'download',
      method: 'drs',
      version_id: a1.versionId,
    });
  });

  it('reports an access id the object does not have as 404, and counts (object, access id) pairs', async () => {
    const res = await drs('POST', '/objects/access', {
      body: { bulk_object_access_ids: [{ bulk_object_id: a1.versionId, bulk_access_ids: ['https', 'gs'] }] },
    });
    expect(res.body.summary).toEqual({ requested: 2, resolved: 1, unresolved: 1 });
    expect(unresolvedOf(res.body)).toEqual({ 404: [a1.versionId] });
    const over = await drs('POST', '/objects/access', {
      body: {
        bulk_object_access_ids: [
          { bulk_object_id: a1.versionId, bulk_access_ids: ['https', 'a', 'b'] },
          { bulk_object_id: a2.versionId, bulk_access_ids: ['https', 'c', 'd'] },
        ],
      },
    });
    expect(over.status).toBe(413);
  });

  it('refuses anonymous callers', async () => {
    const res = await drs('POST', '/objects/access', {
      token: null,
      body: { bulk_object_access_ids: [{ bulk_object_id: a1.versionId }] },
    });
    expect(res.status).toBe(401);
  });
});

describe('OPTIONS /objects', () => {
  it('answers the authorizations of each id without a token, and 413 over the limit', async () => {
    const res = await drs('OPTIONS', '/objects', {
      token: null,
      body: { bulk_object_ids: [a1.versionId, 'FV_ZZZZZZZZ', 'nonsense'] },
    });
    expect(res.status).toBe(200);
    const auth = { supported_types: ['BearerAuth'], bearer_auth_issuers: [api.idp.issuer] };
    expect(res.body).toMatchObject({
      ...auth,
      summary: { requested: 3, resolved: 2, unresolved: 1 },
      resolved_drs_object: [
        { drs_object_id: a1.versionId, ...auth },
        { drs_object_id: 'FV_ZZZZZZZZ', ...auth },
      ],
      unresolved_drs_objects: [{ error_code: 404, object_ids: ['nonsense'] }],
    });
    const over = await drs('OPTIONS', '/objects', {
      token: null,
      body: { bulk_object_ids: Array.from({ length: MAX + 1 }, () => a1.versionId) },
    });
    expect(over.status).toBe(413);
  });
});
