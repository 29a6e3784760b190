import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesOf, type FilesApi, MiB, startFilesApi } from './harness.js';

/**
 * HEAD has no side effects: on /signed-url/… it mints nothing, on /download/… it claims no signed-URL token, reads no
 * object and writes no audit record; both answer as the GET would (status and headers), without a body.
 */
let api: FilesApi;
let small: { fileId: string; versionId: string };
let large: { fileId: string; versionId: string };

beforeAll(async () => {
  api = await startFilesApi();
  small = await api.upload(api.studyA, bytesOf(1500, 5), { fileName: 'small.csv', contentType: 'text/csv' });
  large = await api.upload(api.studyA, bytesOf(2 * MiB, 6), { fileName: 'large.bin' });
});
afterAll(async () => {
  await api?.close();
});

/** Every item of the files table that a HEAD could have written: audit records and signed-URL tokens. */
async function writes(): Promise<number> {
  let n = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const out = await api.doc.send(
      new ScanCommand({ TableName: process.env.FILES_TABLE, ExclusiveStartKey: start }),
    );
    n += (out.Items ?? []).filter((i) => /^(AUDIT|TOKEN|SIGNED)/.test(String(i.pk))).length;
    start = out.LastEvaluatedKey;
  } while (start);
  return n;
}

const download = (f: { fileId: string; versionId?: string }, study = api.studyA) =>
  `/download/study/${study}/file/${f.fileId}${f.versionId ? `/version/${f.versionId}` : ''}`;
const signedUrl = (f: { fileId: string; versionId?: string }, study = api.studyA) =>
  `/signed-url/study/${study}/files/${f.fileId}${f.versionId ? `/version/${f.versionId}` : ''}`;

describe('HEAD /signed-url/…', () => {
  it('answers as a mint would, and mints nothing: no token, no audit record', async () => {
    const before = await writes();
    const head = await api.call('HEAD', signedUrl(small), { token: api.memberA });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(head.headers.get('cache-control')).toBe('no-store');
    expect((await api.call('HEAD', signedUrl(small), { token: api.memberB })).status).toBe(403);
    expect((await api.call('HEAD', signedUrl(small), { token: null })).status).toBe(401);
    expect(
      (await api.call('HEAD', signedUrl({ fileId: 'SF_ZZZZZZZZ' }), { token: api.memberA })).status,
    ).toBe(404);
    expect(await writes()).toBe(before);
    // The GET of the same route does mint (one token, one audit record).
    const minted = await api.call('GET', signedUrl(small), { token: api.memberA });
    expect(minted.status).toBe(200);
    expect(await writes()).toBe(before + 2);
  });
});

describe('HEAD /download/…', () => {
  it('answers the headers of the bytes without reading the object or writing an audit record', async () => {
    const f = await api.upload(api.studyA, bytesOf(700, 9), {
      fileName: 'gone.txt',
      contentType: 'text/plain',
    });
    // The object is gone: a GET could not read it, so a HEAD that answers 200 read nothing.
    await api.s3.client.send(
      new DeleteObjectCommand({
        Bucket: api.s3.bucket,
        Key: `studies/${api.studyA}/files/${f.fileId}/versions/${f.versionId}`,
      }),
    );
    const before = await writes();
    const head = await api.call('HEAD', download(f), { token: api.memberA });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(head.headers.get('content-type')).toBe('text/plain');
    expect(head.headers.get('content-disposition')).toContain('gone.txt');
    expect(head.headers.get('cache-control')).toBe('no-store');
    expect(await writes()).toBe(before);
  });

  it('never answers a redirect: a Location would be a download no audit record names', async () => {
    const before = await writes();
    const head = await api.call('HEAD', download(large), { token: api.memberA, redirect: 'manual' });
    expect(head.status).toBe(200);
    expect(head.headers.get('location')).toBeNull();
    expect(head.headers.get('content-disposition')).toContain('large.bin');
    expect(await writes()).toBe(before);
  });

  it('refuses as a GET would: no credential, another study, an unknown file', async () => {
    expect((await api.call('HEAD', download(small), { token: null })).status).toBe(401);
    expect((await api.call('HEAD', download(small), { token: api.memberB })).status).toBe(403);
    expect((await api.call('HEAD', download({ fileId: 'SF_ZZZZZZZZ' }), { token: api.memberA })).status).toBe(
      404,
    );
  });

  it('checks a signed-URL token without claiming it: the link still works once afterwards', async () => {
    const minted = await api.call('POST', signedUrl(small), { token: api.memberA });
    expect(minted.status).toBe(200);
    const url = minted.body.url as string;
    const before = await writes();
    for (let i = 0; i < 3; i++) {
      const head = await fetch(url, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-type')).toBe('text/csv');
    }
    // A HEAD of the link on another path is refused, as a GET would be, and spends nothing either.
    const token = new URL(url).searchParams.get('token');
    const misaddressed = await fetch(`${api.baseUrl}${download(large)}?token=${token}`, { method: 'HEAD' });
    expect(misaddressed.status).toBe(401);
    expect(await writes()).toBe(before);
    expect((await fetch(url)).status).toBe(200);
    // Spent now: a HEAD says so too.
    expect((await fetch(url, { method: 'HEAD' })).status).toBe(401);
    expect((await fetch(url)).status).toBe(401);
  });
});
