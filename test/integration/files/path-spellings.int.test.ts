import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downloadRoutes, signedUrlRoutes } from '#functions/files/contracts/downloads.js';
import { bytesOf, type FilesApi, startFilesApi } from './harness.js';

/**
 * Every spelling of the download-style paths (study|study_id, file|files, with and without /version/<vid>) serves
 * the same thing: each route of the contracts, filled in, downloads the file or mints a signed URL of it.
 */
let api: FilesApi;
let file: { fileId: string; versionId: string };
const bytes = bytesOf(700, 9);
beforeAll(async () => {
  api = await startFilesApi();
  file = await api.upload(api.studyA, bytes, { fileName: 'spelled.bin' });
});
afterAll(async () => {
  await api?.close();
});

const fill = (path: string) =>
  path
    .replace('{studyId}', api.studyA)
    .replace('{fileId}', file.fileId)
    .replace('{versionId}', file.versionId);

describe('every spelling of a download path', () => {
  it.each(Object.entries(downloadRoutes))('%s downloads the bytes', async (_, route) => {
    const res = await api.call(route.method, fill(route.path), { token: api.memberA });
    expect(res.status).toBe(200);
    expect(res.bytes.equals(bytes)).toBe(true);
  });

  it.each(Object.entries(signedUrlRoutes))('%s mints a single-use URL of the version', async (_, route) => {
    const res = await api.call(route.method, fill(route.path), { token: api.memberA });
    expect(res.status).toBe(200);
    const download = await fetch(res.body.url);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
  });
});
