import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectUnauthorized, files, show, target } from './lib/http.js';
import { walk } from './lib/lists.js';
import { pickStudy } from './lib/studies.js';
import { sampleBytes, type Uploaded, upload } from './lib/uploads.js';

/**
 * The study file service, as a user goes through it: upload (presigned PUT, confirm), download with the bearer
 * token, share a single-use signed URL (REST and GraphQL), a developer token's life, GA4GH DRS, and the audit trail
 * all of that leaves. Everything it creates it deletes (the audit records stay, as they must).
 */
let file: Uploaded;
let large: Uploaded | undefined;
const devTokenName = `e2e-${Date.now()}-${randomBytes(3).toString('hex')}`;
let devTokenCreated = false;

/**
 * The path of an absolute URL the service answered. Its origin is the service's public one (PUBLIC_BASE_URL), which
 * behind a custom domain is not the URL the suite was given.
 */
const pathOf = (url: string) => new URL(url).pathname;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const downloadPath = (u: Uploaded, version = false) =>
  `/download/study/${u.studyId}/file/${u.fileId}${version ? `/version/${u.versionId}` : ''}`;

beforeAll(async () => {
  file = await upload(await pickStudy(), sampleBytes(3000), { fileName: 'e2e-genes.tsv' });
});

afterAll(async () => {
  if (devTokenCreated) await files('DELETE', `/developer-tokens/${encodeURIComponent(devTokenName)}`);
  for (const u of [file, large]) {
    if (!u) continue;
    const res = await files('DELETE', `/files/${u.fileId}`);
    expect(res.status, show(res)).toBe(200);
  }
});

describe('files: upload and download', () => {
  it('uploads through a presigned PUT and a confirmation: the version is available and listed', () => {
    expect(file.confirmed).toMatchObject({
      kf_id: file.versionId,
      study_id: file.studyId,
      size: file.bytes.length,
      sha256: sha256(file.bytes),
      state: 'available',
    });
    expect(pathOf(file.confirmed.download_url)).toBe(downloadPath(file, true));
  });

  it('serves the file and its versions to an admin, in the list envelope', async () => {
    const one = await files('GET', `/files/${file.fileId}`);
    expect(one.status, show(one)).toBe(200);
    expect(one.body).toMatchObject({ kf_id: file.fileId, study_id: file.studyId, name: 'e2e-genes.tsv' });
    const versions = await walk(`${target().filesUrl}/files/${file.fileId}/versions?limit=1`, {
      keep: (v) => pathOf(v.file) === `/files/${file.fileId}`,
    });
    expect(versions.results.map((v) => v.kf_id)).toEqual([file.versionId]);
    // Newest first: a file uploaded a moment ago is on the first page of its study.
    const inStudy = await files('GET', `/studies/${file.studyId}/files?limit=20`);
    expect(inStudy.status, show(inStudy)).toBe(200);
    expect(inStudy.body.results.map((f: any) => f.kf_id)).toContain(file.fileId);
  });

  it('downloads the same bytes with the bearer token, newest version and pinned version alike', async () => {
    for (const path of [downloadPath(file), downloadPath(file, true)]) {
      const res = await files('GET', path);
      expect(res.status, show(res)).toBe(200);
      expect(res.bytes.equals(file.bytes)).toBe(true);
      expect(res.headers.get('content-disposition')).toContain('e2e-genes.tsv');
    }
  });

  it('sends a larger file from S3 by a redirect, with the same bytes', async () => {
    // Over 4 MiB, the most DIRECT_DOWNLOAD_MAX_BYTES may be, so every deployment redirects it.
    large = await upload(file.studyId, sampleBytes(4 * 1024 * 1024 + 4096, 'e2e large'), {
      fileName: 'e2e-large.bin',
    });
    const redirect = await files('GET', downloadPath(large), { redirect: 'manual' });
    expect(redirect.status, show(redirect)).toBe(302);
    const location = redirect.headers.get('location')!;
    expect(new URL(location).host).not.toBe(new URL(target().filesUrl).host);
    const bytes = await call('GET', location, { as: 'anonymous' });
    expect(bytes.status, show(bytes)).toBe(200);
    expect(sha256(bytes.bytes)).toBe(sha256(large.bytes));
  });

  it('keeps the file from a token of no study: 403 on its study, and its id unknown (404)', async () => {
    const download = await files('GET', downloadPath(file), { as: 'service' });
    expect(download.status, show(download)).toBe(403);
    const byId = await files('GET', `/files/${file.fileId}`, { as: 'service' });
    expect(byId.status, show(byId)).toBe(404);
    expectUnauthorized(await files('GET', downloadPath(file), { as: 'anonymous' }));
  });
});

describe('files: signed URLs', () => {
  it('mints a signed URL that downloads once without a header, pinned to the version', async () => {
    const minted = await files('POST', `/signed-url/study/${file.studyId}/files/${file.fileId}`);
    expect(minted.status, show(minted)).toBe(200);
    expect(pathOf(minted.body.url)).toBe(downloadPath(file, true));
    expect(new URL(minted.body.url).searchParams.get('token')).toMatch(/^sfsu_[A-Za-z0-9_-]+$/);
    expect(Date.parse(minted.body.expires_at)).toBeGreaterThan(Date.now() - 5_000);
    const first = await call('GET', minted.body.url, { as: 'anonymous' });
    expect(first.status, show(first)).toBe(200);
    expect(first.bytes.equals(file.bytes)).toBe(true);
    expectUnauthorized(await call('GET', minted.body.url, { as: 'anonymous' }));
  });

  it('mints the same through GraphQL signedUrl, and lists the file through GraphQL', async () => {
    const gql = (query: string, variables: Record<string, unknown>) =>
      files('POST', '/graphql', { body: { query, variables } });
    const minted = await gql(
      'mutation($s: String!, $f: String!) { signedUrl(studyId: $s, fileId: $f) { url expiresAt versionId } }',
      { s: file.studyId, f: file.fileId },
    );
    expect(minted.status, show(minted)).toBe(200);
    expect(minted.body.errors).toBeUndefined();
    const signed = minted.body.data.signedUrl;
    expect(signed.versionId).toBe(file.versionId);
    const first = await call('GET', signed.url, { as: 'anonymous' });
    expect(first.status, show(first)).toBe(200);
    expect(first.bytes.equals(file.bytes)).toBe(true);
    expectUnauthorized(await call('GET', signed.url, { as: 'anonymous' }));

    const found = await gql(
      'query($f: String!) { file(id: $f) { name downloadUrl latestVersion { sha256 } } }',
      {
        f: file.fileId,
      },
    );
    expect(found.body.data.file).toMatchObject({
      name: 'e2e-genes.tsv',
      latestVersion: { sha256: sha256(file.bytes) },
    });
    expect(pathOf(found.body.data.file.downloadUrl)).toBe(downloadPath(file));
    const refused = await files('POST', '/graphql', {
      as: 'service',
      body: {
        query: 'mutation($s: String!, $f: String!) { signedUrl(studyId: $s, fileId: $f) { url } }',
        variables: { s: file.studyId, f: file.fileId },
      },
    });
    expect(refused.body.errors?.[0]?.extensions?.code, show(refused)).toBe('FORBIDDEN');
  });
});

describe('files: developer tokens', () => {
  it('lives from creation to deletion: downloads any file, is listed masked, and is refused once deleted', async () => {
    const created = await files('POST', '/developer-tokens', { body: { name: devTokenName } });
    expect(created.status, show(created)).toBe(201);
    devTokenCreated = true;
    const token: string = created.body.token;
    expect(token).toMatch(/^sfdt_/);

    const withHeader = await files('GET', downloadPath(file), { as: { devToken: token } });
    expect(withHeader.status, show(withHeader)).toBe(200);
    expect(withHeader.bytes.equals(file.bytes)).toBe(true);
    const inQuery = await call('GET', `${target().filesUrl}${downloadPath(file)}?token=${token}`, {
      as: 'anonymous',
    });
    expect(inQuery.status, show(inQuery)).toBe(200);
    expect(inQuery.bytes.equals(file.bytes)).toBe(true);

    const listed = await walk(`${target().filesUrl}/developer-tokens?limit=50`, { maxPages: 20 });
    const mine = listed.results.find((d) => d.name === devTokenName);
    expect(mine).toBeDefined();
    expect(mine.token).not.toBe(token);
    expect(mine.token).toMatch(/^sfdt_.{4}\*+$/);
    // A link it mints dies with it.
    const link = await files('POST', `/signed-url/study/${file.studyId}/files/${file.fileId}`, {
      as: { devToken: token },
    });
    expect(link.status, show(link)).toBe(200);

    const deleted = await files('DELETE', `/developer-tokens/${encodeURIComponent(devTokenName)}`);
    expect(deleted.status, show(deleted)).toBe(200);
    devTokenCreated = false;
    expectUnauthorized(await files('GET', downloadPath(file), { as: { devToken: token } }));
    expectUnauthorized(await call('GET', link.body.url, { as: 'anonymous' }));
  });
});

describe('files: GA4GH DRS', () => {
  const drs = () => `${target().filesUrl}/ga4gh/drs/v1`;

  it('resolves the version as a DRS object, by its id and by the file id, and refuses no token', async () => {
    const byVersion = await call('GET', `${drs()}/objects/${file.versionId}`);
    expect(byVersion.status, show(byVersion)).toBe(200);
    expect(byVersion.body).toMatchObject({
      id: file.versionId,
      name: 'e2e-genes.tsv',
      size: file.bytes.length,
      checksums: [{ type: 'sha-256', checksum: sha256(file.bytes) }],
      aliases: [file.fileId],
    });
    expect(byVersion.body.self_uri).toMatch(new RegExp(`^drs://[^/]+/${file.versionId}$`));
    const byFile = await call('GET', `${drs()}/objects/${file.fileId}`);
    expect(byFile.body.id).toBe(file.versionId);
    const anonymous = await call('GET', `${drs()}/objects/${file.versionId}`, { as: 'anonymous' });
    expect(anonymous.status, show(anonymous)).toBe(401);
  });

  it('hands out an access URL that serves the bytes with no header', async () => {
    const access = await call('GET', `${drs()}/objects/${file.versionId}/access/https`);
    expect(access.status, show(access)).toBe(200);
    const bytes = await call('GET', access.body.url, { as: 'anonymous' });
    expect(bytes.status, show(bytes)).toBe(200);
    expect(bytes.bytes.equals(file.bytes)).toBe(true);
  });
});

describe('files: audit', () => {
  it('records every download of the file with how it was reached, newest first, filtered by file', async () => {
    const audit = await walk(`${target().filesUrl}/audit?file=${file.fileId}&limit=5`, {
      keep: (a) => a.file_id === file.fileId,
      limit: 5,
    });
    const downloads = audit.results.filter((a) => a.action === 'download').map((a) => a.method);
    expect(new Set(downloads)).toEqual(new Set(['bearer', 'signed_url', 'developer_token', 'drs']));
    const times = audit.results.map((a) => a.at);
    expect([...times].sort().reverse()).toEqual(times);
  });
});
