import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesOf, type FilesApi, MiB, sha256, startFilesApi } from './harness.js';

let api: FilesApi;
beforeAll(async () => {
  api = await startFilesApi();
});
afterAll(async () => {
  await api?.close();
});

async function objectKeys(prefix = '') {
  const out = await api.s3.client.send(new ListObjectsV2Command({ Bucket: api.s3.bucket, Prefix: prefix }));
  return (out.Contents ?? []).map((o) => o.Key!);
}

async function storedBytes(key: string) {
  const out = await api.s3.client.send(new GetObjectCommand({ Bucket: api.s3.bucket, Key: key }));
  return Buffer.from(await out.Body!.transformToByteArray());
}

const declare = (bytes: Buffer, extra: Record<string, unknown> = {}) => ({
  file_name: 'data.bin',
  size: bytes.length,
  sha256: sha256(bytes),
  ...extra,
});

describe('uploading a file', () => {
  it('creates a pending version with a presigned PUT, and confirming it makes the version available', async () => {
    const bytes = bytesOf(3000, 7);
    const created = await api.call('POST', `/studies/${api.studyA}/files`, {
      token: api.memberA,
      body: declare(bytes, { file_name: 'genes.tsv', content_type: 'text/tab-separated-values' }),
    });
    expect(created.status).toBe(201);
    const { file, version, upload, confirm_url } = created.body;
    expect(file.kf_id).toMatch(/^SF_[0-9A-HJKMNP-TV-Z]{8}$/);
    expect(version.kf_id).toMatch(/^FV_[0-9A-HJKMNP-TV-Z]{8}$/);
    expect(file).toMatchObject({ study_id: api.studyA, name: 'genes.tsv', created_by: 'member-a' });
    expect(version).toMatchObject({
      state: 'pending',
      size: 3000,
      sha256: sha256(bytes),
      file_name: 'genes.tsv',
      content_type: 'text/tab-separated-values',
      uploaded_by: 'member-a',
      download_url: null,
    });
    expect(upload.type).toBe('single');
    // The declared checksum is signed into the URL, so S3 itself refuses other bytes.
    expect(new URL(upload.url).searchParams.get('x-amz-checksum-sha256')).toBe(
      Buffer.from(sha256(bytes), 'hex').toString('base64'),
    );
    expect(confirm_url).toBe(`${api.baseUrl}/files/${file.kf_id}/versions/${version.kf_id}/confirm`);

    const early = await api.call('GET', `/download/study/${api.studyA}/file/${file.kf_id}`, {
      token: api.memberA,
    });
    expect(early.status).toBe(404);

    expect((await fetch(upload.url, { method: 'PUT', body: bytes })).status).toBe(200);
    const confirmed = await api.call('POST', confirm_url, { token: api.memberA, body: {} });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.state).toBe('available');
    expect(confirmed.body.confirmed_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(confirmed.body.download_url).toBe(
      `${api.baseUrl}/download/study/${api.studyA}/file/${file.kf_id}/version/${version.kf_id}`,
    );
    // Confirming again is harmless.
    const again = await api.call('POST', confirm_url, { token: api.memberA, body: {} });
    expect(again.status).toBe(200);
    expect(again.body.state).toBe('available');
  });

  it('uses a multipart upload above the threshold and stores the bytes unchanged', async () => {
    const bytes = bytesOf(13 * MiB, 11);
    const created = await api.call('POST', `/studies/${api.studyA}/files`, { body: declare(bytes) });
    expect(created.status).toBe(201);
    const { upload, file, version } = created.body;
    expect(upload).toMatchObject({ type: 'multipart', part_size: 5 * MiB, part_count: 3 });
    expect(upload.parts.map((p: { part_number: number }) => p.part_number)).toEqual([1, 2, 3]);

    const parts = [];
    for (const p of upload.parts) {
      const chunk = bytes.subarray((p.part_number - 1) * upload.part_size, p.part_number * upload.part_size);
      const put = await fetch(p.url, { method: 'PUT', body: chunk });
      expect(put.status).toBe(200);
      parts.push({ part_number: p.part_number, etag: put.headers.get('etag') });
    }
    const path = `/files/${file.kf_id}/versions/${version.kf_id}/confirm`;
    const withoutParts = await api.call('POST', path, { body: {} });
    expect(withoutParts.status).toBe(400);
    expect(withoutParts.body.error.fields).toHaveProperty('parts');

    const confirmed = await api.call('POST', path, { body: { parts } });
    expect(confirmed.status).toBe(202);
    expect(confirmed.body.state).toBe('verifying');
    const done = await api.waitForVersion(file.kf_id, version.kf_id, (v) => v.state !== 'verifying');
    expect(done.state).toBe('available');
    const key = `studies/${api.studyA}/files/${file.kf_id}/versions/${version.kf_id}`;
    expect(sha256(await storedBytes(key))).toBe(sha256(bytes));
  });

  it('hands out fresh upload URLs for the parts a client asks for', async () => {
    const bytes = bytesOf(7 * MiB, 3);
    const created = await api.call('POST', `/studies/${api.studyA}/files`, { body: declare(bytes) });
    const { file, version } = created.body;
    const path = `/files/${file.kf_id}/versions/${version.kf_id}/upload-urls`;
    const fresh = await api.call('POST', path, { body: { part_numbers: [2] } });
    expect(fresh.status).toBe(200);
    expect(fresh.body.upload.parts).toHaveLength(1);
    expect(fresh.body.upload.parts[0].part_number).toBe(2);
    expect(fresh.body.upload.parts[0].url).toContain('partNumber=2');
    const tooFar = await api.call('POST', path, { body: { part_numbers: [3] } });
    expect(tooFar.status).toBe(400);
    expect(tooFar.body.error.fields).toHaveProperty('part_numbers');
  });

  it('leaves a version pending when nothing was uploaded yet', async () => {
    const bytes = bytesOf(100);
    const { file, version } = (
      await api.call('POST', `/studies/${api.studyA}/files`, { body: declare(bytes) })
    ).body;
    const res = await api.call('POST', `/files/${file.kf_id}/versions/${version.kf_id}/confirm`, {
      body: {},
    });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('conflict');
    const after = await api.call('GET', `/files/${file.kf_id}/versions/${version.kf_id}`);
    expect(after.body.state).toBe('pending');
  });

  it('marks a version failed, and deletes the object, when its size or SHA-256 is not what was declared', async () => {
    for (const [label, override] of [
      ['size', { size: 5000 }],
      ['sha256', { sha256: 'a'.repeat(64) }],
    ] as const) {
      const bytes = bytesOf(4000, 5);
      const created = await api.call('POST', `/studies/${api.studyA}/files`, {
        body: declare(bytes, override),
      });
      const { file, version, upload } = created.body;
      // s3rver does not check the signed checksum (real S3 would refuse the PUT); the confirmation catches it.
      expect((await fetch(upload.url, { method: 'PUT', body: bytes })).status).toBe(200);
      const res = await api.call('POST', `/files/${file.kf_id}/versions/${version.kf_id}/confirm`, {
        body: {},
      });
      expect(res.status, label).toBe(422);
      expect(res.body.error.code).toBe('upload_mismatch');
      expect(res.body.error.message).toContain(label === 'size' ? 'size' : 'SHA-256');
      const stored = await api.call('GET', `/files/${file.kf_id}/versions/${version.kf_id}`);
      expect(stored.body.state).toBe('failed');
      expect(await objectKeys(`studies/${api.studyA}/files/${file.kf_id}/`)).toEqual([]);
      const download = await api.call('GET', `/download/study/${api.studyA}/file/${file.kf_id}`);
      expect(download.status).toBe(404);
    }
  });

  it('adds versions to a file; a download without a version returns the newest available one', async () => {
    const first = bytesOf(1000, 21);
    const second = bytesOf(1200, 22);
    const { fileId, versionId: v1 } = await api.upload(api.studyA, first, { token: api.memberA });
    api.clock.advance(1000);
    const { versionId: v2 } = await api.upload(api.studyA, second, { fileId, token: api.memberA });
    // A third version that is never confirmed does not become "latest".
    api.clock.advance(1000);
    const pending = await api.call('POST', `/files/${fileId}/versions`, {
      token: api.memberA,
      body: declare(first),
    });
    expect(pending.status).toBe(201);

    const latest = await api.call('GET', `/download/study/${api.studyA}/file/${fileId}`, {
      token: api.memberA,
    });
    expect(latest.status).toBe(200);
    expect(latest.bytes.equals(second)).toBe(true);
    const pinned = await api.call('GET', `/download/study/${api.studyA}/file/${fileId}/version/${v1}`, {
      token: api.memberA,
    });
    expect(pinned.bytes.equals(first)).toBe(true);

    const versions = await api.call('GET', `/files/${fileId}/versions?limit=2`, { token: api.memberA });
    expect(versions.status).toBe(200);
    expect(versions.body.count).toBe(3);
    expect(versions.body.results.map((v: { kf_id: string }) => v.kf_id).slice(1)).toEqual([v2]);
    expect(versions.body.results[0].state).toBe('pending');
    expect(versions.body.next.replace(/&cursor=[\w-]+$/, '')).toBe(
      `${api.baseUrl}/files/${fileId}/versions?limit=2&offset=2`,
    );
    const page2 = await api.call('GET', versions.body.next, { token: api.memberA });
    expect(page2.body.results.map((v: { kf_id: string }) => v.kf_id)).toEqual([v1]);
    expect(page2.body.previous).toBe(`${api.baseUrl}/files/${fileId}/versions?limit=2&offset=0`);
  });

  it('refuses uploads from callers who are not admins or members of the study', async () => {
    const body = declare(bytesOf(10));
    const anonymous = await api.call('POST', `/studies/${api.studyA}/files`, { token: null, body });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    for (const token of [api.memberB, api.outsider]) {
      const res = await api.call('POST', `/studies/${api.studyA}/files`, { token, body });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
  });

  it('answers a non-member exactly as an unknown id on the upload routes of a file of another study', async () => {
    const body = declare(bytesOf(10));
    const pending = await api.call('POST', `/studies/${api.studyA}/files`, { token: api.memberA, body });
    expect(pending.status).toBe(201);
    const fileId = pending.body.file.kf_id;
    const versionId = pending.body.version.kf_id;
    const unknownFile = 'SF_ZZZZZZZZ';
    const unknownVersion = 'FV_ZZZZZZZZ';
    const pairs: [string, string, unknown][] = [
      [`/files/${fileId}/versions`, `/files/${unknownFile}/versions`, body],
      [
        `/files/${fileId}/versions/${versionId}/confirm`,
        `/files/${unknownFile}/versions/${versionId}/confirm`,
        {},
      ],
      [
        `/files/${fileId}/versions/${versionId}/upload-urls`,
        `/files/${fileId}/versions/${unknownVersion}/upload-urls`,
        {},
      ],
    ];
    for (const [real, unknown, b] of pairs)
      for (const token of [api.memberB, api.outsider]) {
        const theirs = await api.call('POST', real, { token, body: b });
        const none = await api.call('POST', unknown, { token, body: b });
        expect(theirs.status, real).toBe(404);
        expect(none.status, unknown).toBe(404);
        // Same code; the message names only what the caller sent, so it cannot tell the two apart either.
        expect(theirs.body.error.code).toBe(none.body.error.code);
        const masked = (m: string) =>
          m
            .replaceAll(fileId, 'F')
            .replaceAll(unknownFile, 'F')
            .replaceAll(versionId, 'V')
            .replaceAll(unknownVersion, 'V');
        expect(masked(theirs.body.error.message)).toBe(masked(none.body.error.message));
      }
    // The member still may.
    const mine = await api.call('POST', `/files/${fileId}/versions/${versionId}/upload-urls`, {
      token: api.memberA,
      body: {},
    });
    expect(mine.status).toBe(200);
  });

  it('refuses a content_type that is not a valid header value, naming it; a valid one is served as given', async () => {
    for (const content_type of [
      'text/plain; a=\u0001',
      'text/csv\r\n; x=1',
      'text/plain\n;x',
      'text/plain; charset="utf-8\u0007"',
      'text/plain; charset=utf-8\u00a0',
    ]) {
      const res = await api.call('POST', `/studies/${api.studyA}/files`, {
        token: api.memberA,
        body: declare(bytesOf(10), { content_type }),
      });
      expect(res.status, JSON.stringify(content_type)).toBe(400);
      expect(Object.keys(res.body.error.fields)).toEqual(['content_type']);
    }
    const bytes = bytesOf(20, 3);
    const created = await api.call('POST', `/studies/${api.studyA}/files`, {
      token: api.memberA,
      body: declare(bytes, { content_type: 'text/plain; charset="utf-8"' }),
    });
    expect(created.status).toBe(201);
    const put = await fetch(created.body.upload.url, { method: 'PUT', body: bytes });
    expect(put.status).toBe(200);
    const confirmed = await api.call('POST', created.body.confirm_url, {
      token: api.memberA,
      body: {},
    });
    expect(confirmed.status).toBe(200);
    const got = await api.call('GET', `/download/study/${api.studyA}/file/${created.body.file.kf_id}`, {
      token: api.memberA,
    });
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('text/plain; charset="utf-8"');
  });

  it('answers 404 for a study that is not in the studies table, and 400 naming bad or unknown fields', async () => {
    const unknown = await api.call('POST', '/studies/SD_ZZZZZZZZ/files', { body: declare(bytesOf(10)) });
    expect(unknown.status).toBe(404);
    const bad = await api.call('POST', `/studies/${api.studyA}/files`, {
      body: { file_name: 'a/b', size: -1, sha256: 'xyz', colour: 'red' },
    });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.error.fields).sort()).toEqual(['body', 'file_name', 'sha256', 'size'].sort());
    expect(bad.body.error.fields.body[0]).toContain('colour');
  });
});

describe('listing files', () => {
  it('lists a study’s files newest first with the coordinator’s envelope', async () => {
    const studyFiles = await api.call('GET', `/studies/${api.studyB}/files`, { token: api.memberB });
    expect(studyFiles.body).toEqual({ count: 0, next: null, previous: null, results: [] });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      api.clock.advance(1000);
      ids.push((await api.upload(api.studyB, bytesOf(50, i + 1), { fileName: `f${i}.txt` })).fileId);
    }
    const page = await api.call('GET', `/studies/${api.studyB}/files?limit=2`, { token: api.memberB });
    expect(page.status).toBe(200);
    expect(page.body.count).toBe(3);
    expect(page.body.results.map((f: { kf_id: string }) => f.kf_id)).toEqual([ids[2], ids[1]]);
    expect(page.body.results[0]).toMatchObject({
      name: 'f2.txt',
      study_id: api.studyB,
      versions: `${api.baseUrl}/files/${ids[2]}/versions`,
      download_url: `${api.baseUrl}/download/study/${api.studyB}/file/${ids[2]}`,
    });
    expect(page.body.next.replace(/&cursor=[\w-]+$/, '')).toBe(
      `${api.baseUrl}/studies/${api.studyB}/files?limit=2&offset=2`,
    );
    const tooMany = await api.call('GET', `/studies/${api.studyB}/files?limit=101`, { token: api.memberB });
    expect(tooMany.status).toBe(400);
    const file = await api.call('GET', `/files/${ids[0]}`, { token: api.memberB });
    expect(file.status).toBe(200);
    expect(file.body.kf_id).toBe(ids[0]);
  });
});

describe('deleting', () => {
  it('deletes a version and its object (admins only)', async () => {
    const { fileId, versionId } = await api.upload(api.studyA, bytesOf(500, 9));
    const key = `studies/${api.studyA}/files/${fileId}/versions/${versionId}`;
    expect(await objectKeys(key)).toEqual([key]);
    const byMember = await api.call('DELETE', `/files/${fileId}/versions/${versionId}`, {
      token: api.memberA,
    });
    expect(byMember.status).toBe(403);
    const res = await api.call('DELETE', `/files/${fileId}/versions/${versionId}`);
    expect(res.status).toBe(200);
    expect(await objectKeys(key)).toEqual([]);
    expect((await api.call('GET', `/files/${fileId}/versions/${versionId}`)).status).toBe(404);
    expect((await api.call('DELETE', `/files/${fileId}/versions/${versionId}`)).status).toBe(404);
  });

  it('deletes a file with every version and every object, pending multipart uploads included', async () => {
    const { fileId } = await api.upload(api.studyA, bytesOf(500, 1));
    await api.upload(api.studyA, bytesOf(600, 2), { fileId });
    const multipart = await api.call('POST', `/files/${fileId}/versions`, {
      body: declare(bytesOf(7 * MiB)),
    });
    expect(multipart.body.upload.type).toBe('multipart');
    expect(await objectKeys(`studies/${api.studyA}/files/${fileId}/`)).toHaveLength(2);

    expect((await api.call('DELETE', `/files/${fileId}`, { token: api.memberA })).status).toBe(403);
    const res = await api.call('DELETE', `/files/${fileId}`);
    expect(res.status).toBe(200);
    expect(res.text).toBe('');
    expect(await objectKeys(`studies/${api.studyA}/files/${fileId}/`)).toEqual([]);
    expect((await api.call('GET', `/files/${fileId}`)).status).toBe(404);
    expect((await api.call('GET', `/download/study/${api.studyA}/file/${fileId}`)).status).toBe(404);
    const audit = await api.call('GET', `/audit?file=${fileId}`);
    const deletion = audit.body.results.find((r: { action: string }) => r.action === 'file.delete');
    expect(deletion).toMatchObject({
      method: 'bearer',
      actor: 'admin-user',
      study_id: api.studyA,
      file_id: fileId,
    });
  });
});

describe('creating a file or a version with Idempotency-Key', () => {
  it('a retried file creation answers the first 201 replayed and makes one file', async () => {
    const bytes = bytesOf(100, 3);
    const body = declare(bytes, { file_name: `idem-${Date.now()}.tsv` });
    const headers = { 'Idempotency-Key': `file-${Date.now()}` };
    const first = await api.call('POST', `/studies/${api.studyA}/files`, {
      token: api.memberA,
      body,
      headers,
    });
    const retry = await api.call('POST', `/studies/${api.studyA}/files`, {
      token: api.memberA,
      body,
      headers,
    });
    expect(first.status).toBe(201);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body.file.kf_id).toBe(first.body.file.kf_id);
    const versions = await api.call('GET', `/files/${first.body.file.kf_id}/versions`, {
      token: api.memberA,
    });
    expect(versions.body.count).toBe(1);

    const other = await api.call('POST', `/studies/${api.studyA}/files`, {
      token: api.memberA,
      body: declare(bytesOf(101, 3)),
      headers,
    });
    expect(other.status).toBe(422);

    const vHeaders = { 'Idempotency-Key': `version-${Date.now()}` };
    const vBody = declare(bytesOf(200, 4));
    const v1 = await api.call('POST', `/files/${first.body.file.kf_id}/versions`, {
      token: api.memberA,
      body: vBody,
      headers: vHeaders,
    });
    const v2 = await api.call('POST', `/files/${first.body.file.kf_id}/versions`, {
      token: api.memberA,
      body: vBody,
      headers: vHeaders,
    });
    expect(v1.status).toBe(201);
    expect(v2.headers.get('idempotent-replayed')).toBe('true');
    expect(v2.body.version.kf_id).toBe(v1.body.version.kf_id);
    const after = await api.call('GET', `/files/${first.body.file.kf_id}/versions`, { token: api.memberA });
    expect(after.body.count).toBe(2);
  });
});
