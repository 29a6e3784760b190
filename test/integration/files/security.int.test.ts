import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectKey } from '#functions/files/uploads.js';
import { bytesOf, type FilesApi, MiB, sha256, startFilesApi } from './harness.js';

/**
 * The file service's security fixes: a caller who may not see a file learns nothing about whether it exists,
 * signed URLs minted with a developer token die with that token, and multipart uploads are verified by the
 * separate worker (202 `verifying`, then `available` or `failed`).
 */
let api: FilesApi;
beforeAll(async () => {
  api = await startFilesApi();
});
afterAll(async () => {
  await api?.close();
});

/** The body with the one id it names replaced, so two answers about different ids compare. */
const shape = (body: unknown, id: string) => JSON.parse(JSON.stringify(body).replaceAll(id, '<id>'));

describe('files a caller may not see', () => {
  it('are answered exactly as unknown ids (404, same body) for GET /files/<fid>, its versions and a version', async () => {
    const { fileId, versionId } = await api.upload(api.studyA, bytesOf(100));
    const unknownFile = 'SF_00000000';
    const unknownVersion = 'FV_00000000';
    for (const token of [api.memberB, api.outsider]) {
      const pairs: [string, string, string][] = [
        [`/files/${fileId}`, `/files/${unknownFile}`, ''],
        [`/files/${fileId}/versions`, `/files/${unknownFile}/versions`, ''],
        [`/files/${fileId}/versions/${versionId}`, `/files/${unknownFile}/versions/${unknownVersion}`, 'v'],
      ];
      for (const [hidden, unknown] of pairs) {
        const a = await api.call('GET', hidden, { token });
        const b = await api.call('GET', unknown, { token });
        expect(a.status, hidden).toBe(404);
        expect(b.status, unknown).toBe(404);
        expect(shape(shape(a.body, fileId), versionId)).toEqual(
          shape(shape(b.body, unknownFile), unknownVersion),
        );
      }
    }
    expect((await api.call('GET', `/files/${fileId}`, { token: api.memberA })).status).toBe(200);
  });
});

describe('signed URLs minted with a developer token', () => {
  it('stop working once that developer token is deleted', async () => {
    const { fileId, versionId } = await api.upload(api.studyA, bytesOf(200, 7));
    const created = await api.call('POST', '/developer-tokens', { body: { name: 'short-lived' } });
    expect(created.status).toBe(201);
    const dev = created.body.token as string;
    const mint = () =>
      api.call('POST', `/signed-url/study/${api.studyA}/files/${fileId}/version/${versionId}`, {
        token: null,
        headers: { Authorization: `Token ${dev}` },
      });
    const kept = await mint();
    const revoked = await mint();
    expect(kept.status).toBe(200);
    expect((await api.call('GET', kept.body.url, { token: null })).status).toBe(200);
    expect((await api.call('DELETE', '/developer-tokens/short-lived')).status).toBe(200);
    const after = await api.call('GET', revoked.body.url, { token: null });
    expect(after.status).toBe(401);
  });
});

describe('multipart uploads', () => {
  it('answer the confirmation with 202 and state verifying, and the worker makes the version available', async () => {
    const bytes = bytesOf(7 * MiB, 3);
    const created = await api.call('POST', `/studies/${api.studyA}/files`, {
      body: { file_name: 'big.bin', size: bytes.length, sha256: sha256(bytes) },
    });
    const { file, version, upload } = created.body;
    expect(upload.type).toBe('multipart');
    const parts = [];
    for (const p of upload.parts) {
      const chunk = bytes.subarray((p.part_number - 1) * upload.part_size, p.part_number * upload.part_size);
      const put = await fetch(p.url, { method: 'PUT', body: chunk });
      parts.push({ part_number: p.part_number, etag: put.headers.get('etag') });
    }
    const path = `/files/${file.kf_id}/versions/${version.kf_id}`;
    const confirmed = await api.call('POST', `${path}/confirm`, { body: { parts } });
    expect(confirmed.status).toBe(202);
    expect(confirmed.body.state).toBe('verifying');
    const done = await api.waitForVersion(file.kf_id, version.kf_id, (v) => v.state !== 'verifying');
    expect(done.state).toBe('available');
    const got = await api.call('GET', `/download/study/${api.studyA}/files/${file.kf_id}`, {
      redirect: 'follow',
    });
    expect(sha256(got.bytes)).toBe(sha256(bytes));
  });

  it('mark a multipart upload whose bytes do not match failed, and delete the object', async () => {
    const bytes = bytesOf(7 * MiB, 4);
    const created = await api.call('POST', `/studies/${api.studyA}/files`, {
      body: { file_name: 'bad.bin', size: bytes.length, sha256: sha256(bytesOf(7 * MiB, 5)) },
    });
    const { file, version, upload } = created.body;
    const parts = [];
    for (const p of upload.parts) {
      const chunk = bytes.subarray((p.part_number - 1) * upload.part_size, p.part_number * upload.part_size);
      const put = await fetch(p.url, { method: 'PUT', body: chunk });
      parts.push({ part_number: p.part_number, etag: put.headers.get('etag') });
    }
    const confirmed = await api.call('POST', `/files/${file.kf_id}/versions/${version.kf_id}/confirm`, {
      body: { parts },
    });
    expect(confirmed.status).toBe(202);
    const done = await api.waitForVersion(file.kf_id, version.kf_id, (v) => v.state !== 'verifying');
    expect(done.state).toBe('failed');
    expect(await api.deps.store.stat(objectKey(api.studyA, file.kf_id, version.kf_id))).toBeNull();
  });
});
