import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectUnauthorized, files, show, target } from '../lib/http.js';
import { walk } from '../lib/lists.js';
import { pickStudy } from '../lib/studies.js';
import { sampleBytes, upload } from '../lib/uploads.js';

/**
 * Smoke (safe against production): the file service answers, refuses what it must, serves its lists, and a signed
 * URL for the canary file (E2E_CANARY_STUDY, E2E_CANARY_FILE) is minted, downloaded without a header, and refused
 * the second time. What this writes: the signed URL's token record (its hash; it expires in 30 s and DynamoDB's TTL
 * purges it) and two audit records, `signed_url.create` and the download's, as any download does.
 *
 * Without a canary (a local stack, or a full run against a deployment that may be written to), the suite uploads
 * one itself and deletes it afterwards; the smoke run against a deployment requires one.
 */
let canary: { study: string; file: string };
let uploadedHere = false;

beforeAll(async () => {
  const t = target();
  if (t.canary) {
    canary = t.canary;
    return;
  }
  if (t.smoke && t.mode === 'remote')
    throw new Error(
      '--smoke against a deployment needs E2E_CANARY_STUDY and E2E_CANARY_FILE (docs/deploy.md)',
    );
  const study = await pickStudy();
  const up = await upload(study, sampleBytes(4096, 'e2e canary'), { fileName: 'e2e-canary.txt' });
  canary = { study, file: up.fileId };
  uploadedHere = true;
});

afterAll(async () => {
  if (!uploadedHere) return;
  const res = await files('DELETE', `/files/${canary.file}`);
  expect(res.status, show(res)).toBe(200);
});

describe('files: health', () => {
  it('answers GET /health and the GA4GH service-info without a token', async () => {
    const health = await files('GET', '/health', { as: 'anonymous' });
    expect(health.status, show(health)).toBe(200);
    expect(health.body).toEqual({ status: 'ok', version: expect.any(String) });
    const info = await files('GET', '/ga4gh/drs/v1/service-info', { as: 'anonymous' });
    expect(info.status, show(info)).toBe(200);
    expect(info.body.type).toEqual({ group: 'org.ga4gh', artifact: 'drs', version: '1.5.0' });
    expect(info.body.drs.objectCount).toBeGreaterThanOrEqual(1);
  });
});

describe('files: auth', () => {
  it('refuses its routes without a token, or with one that is not a token (401)', async () => {
    const { study, file } = canary;
    for (const path of [
      `/studies/${study}/files`,
      `/files/${file}`,
      `/download/study/${study}/file/${file}`,
      `/signed-url/study/${study}/files/${file}`,
      '/developer-tokens',
      '/audit',
    ]) {
      expectUnauthorized(await files('GET', path, { as: 'anonymous' }));
      expectUnauthorized(await files('GET', path, { as: { bearer: 'not-a-token' } }));
    }
  });

  it('answers 403 to a valid token that is neither an admin nor a member of the study', async () => {
    const { study, file } = canary;
    for (const path of [
      `/studies/${study}/files`,
      `/download/study/${study}/file/${file}`,
      '/developer-tokens',
      '/audit?limit=1',
    ]) {
      const res = await files('GET', path, { as: 'service' });
      expect(res.status, `${path}: ${show(res)}`).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
  });
});

describe('files: lists and the canary', () => {
  it('lists the canary study, its file versions, developer tokens and the audit trail in the list envelope', async () => {
    const { study, file } = canary;
    const base = target().filesUrl;
    const inStudy = await walk(`${base}/studies/${study}/files?limit=2`, {
      maxPages: 2,
      limit: 2,
      keep: (f) => f.study_id === study,
    });
    expect(inStudy.pages[0].body.count).toBeGreaterThanOrEqual(1);
    await walk(`${base}/files/${file}/versions?limit=2`, {
      maxPages: 2,
      limit: 2,
      keep: (v) => v.study_id === study,
    });
    await walk(`${base}/developer-tokens?limit=2`, {
      maxPages: 2,
      limit: 2,
      keep: (d) => !('token' in d) || /\*/.test(d.token),
    });
    await walk(`${base}/audit?file=${file}&limit=2`, {
      maxPages: 2,
      limit: 2,
      keep: (a) => a.file_id === file,
    });
  });

  it('mints a signed URL for the canary, downloads it once without a header, and refuses it the second time', async () => {
    const { study, file } = canary;
    const minted = await files('POST', `/signed-url/study/${study}/files/${file}`);
    expect(minted.status, show(minted)).toBe(200);
    const url = new URL(minted.body.url);
    expect(url.searchParams.get('token')).toMatch(/^sfsu_/);
    const versionId = /\/version\/(FV_[0-9A-Z]{8})$/.exec(url.pathname)?.[1];
    expect(versionId, url.pathname).toBeDefined();
    const version = await files('GET', `/files/${file}/versions/${versionId}`);
    expect(version.status, show(version)).toBe(200);

    const first = await call('GET', minted.body.url, { as: 'anonymous' });
    expect(first.status, show(first)).toBe(200);
    expect(first.bytes.length).toBe(version.body.size);
    expect(createHash('sha256').update(first.bytes).digest('hex')).toBe(version.body.sha256);
    expectUnauthorized(await call('GET', minted.body.url, { as: 'anonymous' }));
  });
});
