import { randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoFileRepository } from '#functions/adapters/dynamodb/files-repository.js';
import type { AuditRecord, FileRecord, VersionRecord } from '#functions/files/model.js';
import { newId } from '#functions/shared/ids.js';
import { bytesOf, type FilesApi, sha256, startFilesApi } from './harness.js';

/**
 * Reads by key, on DynamoDB Local and s3rver: a file's latest available version costs one Query of at most two items
 * whatever the number of versions, and the caps on pending uploads (per file, per study) bound what an uploader can
 * leave behind. The caps are set low here (3 pending versions per file, 4 pending files per study).
 */
let api: FilesApi;
beforeAll(async () => {
  api = await startFilesApi({ MAX_PENDING_VERSIONS_PER_FILE: '3', MAX_PENDING_FILES_PER_STUDY: '4' });
});
afterAll(async () => {
  await api?.close();
});

/** The test's document client, counting the calls made and the items they brought back. */
function counting(doc: DynamoDBDocumentClient) {
  const seen = { calls: 0, items: 0 };
  const send = (async (command: Parameters<DynamoDBDocumentClient['send']>[0]) => {
    const out = (await doc.send(command as never)) as { Items?: unknown[]; Item?: unknown };
    seen.calls++;
    seen.items += (out.Items?.length ?? 0) + (out.Item ? 1 : 0);
    return out;
  }) as DynamoDBDocumentClient['send'];
  return { doc: { send }, seen };
}

const at = (n: number) => `2026-01-01T00:00:${String(n).padStart(2, '0')}.000000Z`;

describe("a file's latest version", () => {
  it('is read by key: one Query of at most two items, whatever the number of versions', async () => {
    const table = process.env.FILES_TABLE as string;
    const repo = new DynamoFileRepository(api.doc, table);
    const file: FileRecord = {
      id: newId('SF'),
      study_id: api.studyA,
      name: 'many.bin',
      description: null,
      created_at: at(0),
      created_by: 'u',
    };
    const audit = (n: number): AuditRecord => ({
      id: randomUUID(),
      at: at(n),
      action: 'upload.create',
      method: 'bearer',
      actor: 'u',
      dev_token: null,
      study_id: file.study_id,
      file_id: file.id,
      version_id: null,
      source_ip: null,
      user_agent: null,
    });
    const version = (n: number): VersionRecord => ({
      id: newId('FV'),
      file_id: file.id,
      study_id: file.study_id,
      key: `k${n}`,
      file_name: 'many.bin',
      size: n,
      content_type: 'application/octet-stream',
      sha256: '0'.repeat(64),
      state: 'pending',
      created_at: at(n),
      created_by: 'u',
      confirmed_at: null,
      multipart: null,
    });
    const versions = Array.from({ length: 24 }, (_, i) => version(i + 1));
    expect(await repo.createFile(file, versions[0], audit(1), { maxPendingFiles: 1000 })).toBe('created');
    for (const v of versions.slice(1))
      expect(await repo.addVersion(v, audit(2), { maxPendingVersions: 100 })).toBe('created');
    // Confirm every version up to the 20th, out of order (the 20th first); the 4 newest stay pending.
    for (const n of [20, ...Array.from({ length: 19 }, (_, i) => i + 1)])
      expect(
        await repo.finishUpload(versions[n - 1], { state: 'available', confirmedAt: at(50) }, null),
      ).toBe(true);
    // One more, failed, newer than every available one.
    expect(await repo.finishUpload(versions[21], { state: 'failed', confirmedAt: at(50) }, null)).toBe(true);

    const { doc, seen } = counting(api.doc);
    const found = await new DynamoFileRepository(doc, table).getFileWithLatest(file.id);
    expect(found?.file.id).toBe(file.id);
    expect(found?.latest?.id).toBe(versions[19].id);
    expect(found?.latest?.state).toBe('available');
    expect(seen).toEqual({ calls: 1, items: 2 });

    // Deleting the latest makes the one before it the latest.
    await repo.deleteVersion({ ...versions[19], state: 'available', confirmed_at: at(50) }, audit(3));
    expect((await repo.getFileWithLatest(file.id))?.latest?.id).toBe(versions[18].id);
  });

  it('is what downloads, DRS and GraphQL serve, and a file with none has none', async () => {
    const first = bytesOf(100, 1);
    const f = await api.upload(api.studyA, first);
    const second = bytesOf(120, 2);
    api.clock.advance(1000);
    await api.upload(api.studyA, second, { fileId: f.fileId });
    // A newer pending version is no object yet.
    api.clock.advance(1000);
    const pending = await api.call('POST', `/files/${f.fileId}/versions`, {
      body: { file_name: 'data.bin', size: 3, sha256: sha256(Buffer.from('abc')) },
    });
    expect(pending.status).toBe(201);
    const got = await api.call('GET', `/download/study/${api.studyA}/file/${f.fileId}`, {
      redirect: 'follow',
    });
    expect(sha256(got.bytes)).toBe(sha256(second));
    const gql = await api.call('POST', '/graphql', {
      body: { query: `{ file(id: "${f.fileId}") { latestVersion { size } } }` },
    });
    expect(gql.body).toEqual({ data: { file: { latestVersion: { size: 120 } } } });

    const none = await api.call('POST', `/studies/${api.studyA}/files`, {
      body: { file_name: 'none.bin', size: 3, sha256: sha256(Buffer.from('abc')) },
    });
    const empty = await api.call('GET', `/download/study/${api.studyA}/file/${none.body.file.kf_id}`);
    expect(empty.status).toBe(404);
    for (const id of [none.body.file.kf_id, f.fileId])
      expect((await api.call('DELETE', `/files/${id}`)).status).toBe(200);
  });
});

describe('pending uploads are capped', () => {
  const declare = (n: number) => ({ file_name: `p${n}.bin`, size: 3, sha256: sha256(Buffer.from('abc')) });

  it('at MAX_PENDING_VERSIONS_PER_FILE pending versions per file, until one is confirmed or deleted', async () => {
    const created = await api.call('POST', `/studies/${api.studyA}/files`, { body: declare(1) });
    expect(created.status).toBe(201);
    const fileId = created.body.file.kf_id;
    const more = [];
    for (let i = 0; i < 2; i++) {
      const res = await api.call('POST', `/files/${fileId}/versions`, { body: declare(i) });
      expect(res.status).toBe(201);
      more.push(res.body);
    }
    const refused = await api.call('POST', `/files/${fileId}/versions`, { body: declare(9) });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('conflict');
    expect(refused.body.error.message).toContain('3 pending versions');
    expect((await api.call('GET', `/files/${fileId}/versions`)).body.count).toBe(3);

    // Confirming one frees a place.
    const { upload, confirm_url } = more[0];
    await fetch(upload.url, { method: 'PUT', body: 'abc', headers: upload.headers });
    expect((await api.call('POST', confirm_url, { body: {} })).body.state).toBe('available');
    const next = await api.call('POST', `/files/${fileId}/versions`, { body: declare(10) });
    expect(next.status).toBe(201);
    expect((await api.call('POST', `/files/${fileId}/versions`, { body: declare(11) })).status).toBe(409);

    // So does deleting one.
    const path = `/files/${fileId}/versions/${next.body.version.kf_id}`;
    expect((await api.call('DELETE', path)).status).toBe(200);
    expect((await api.call('POST', `/files/${fileId}/versions`, { body: declare(12) })).status).toBe(201);
  });

  it('at MAX_PENDING_FILES_PER_STUDY files with nothing confirmed per study', async () => {
    const study = api.studyB;
    const files = [];
    for (let i = 0; i < 4; i++) {
      const res = await api.call('POST', `/studies/${study}/files`, { body: declare(i) });
      expect(res.status).toBe(201);
      files.push(res.body);
    }
    const refused = await api.call('POST', `/studies/${study}/files`, { body: declare(5) });
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toContain('4 files');
    // A second version of a pending file is no new pending file.
    expect(
      (await api.call('POST', `/files/${files[0].file.kf_id}/versions`, { body: declare(6) })).status,
    ).toBe(201);

    // A confirmed upload makes its file no longer pending, even one that failed its check.
    const { upload, confirm_url } = files[1];
    await fetch(upload.url, { method: 'PUT', body: 'xyz', headers: upload.headers });
    expect((await api.call('POST', confirm_url, { body: {} })).status).toBe(422);
    const next = await api.call('POST', `/studies/${study}/files`, { body: declare(7) });
    expect(next.status).toBe(201);
    expect((await api.call('POST', `/studies/${study}/files`, { body: declare(8) })).status).toBe(409);

    // Deleting a pending file frees its place.
    expect((await api.call('DELETE', `/files/${files[0].file.kf_id}`)).status).toBe(200);
    expect((await api.call('POST', `/studies/${study}/files`, { body: declare(9) })).status).toBe(201);
  });
});
