import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, coordinator, files, show, target } from './lib/http.js';
import { walk } from './lib/lists.js';
import { needs } from './lib/target.js';
import { sampleBytes, type Uploaded, upload } from './lib/uploads.js';

/**
 * Study members: people whose token names their studies in the groups claim. On Cognito they are users who sign in
 * with MFA, never machine clients, so these journeys need tokens minted by the local identity provider.
 */
let member = '';
let outsider = '';
let studies: string[] = [];
let uploaded: Uploaded | undefined;

/** POST /dev/tokens of the local identity provider. */
async function devToken(sub: string, groups: string[]): Promise<string> {
  const res = await call('POST', target().devTokensUrl!, {
    as: 'anonymous',
    body: { sub, roles: [], groups, expires_in: 900 },
  });
  expect(res.status, show(res)).toBe(200);
  return res.body.access_token;
}

describe('study members', needs('dev-tokens'), () => {
  beforeAll(async () => {
    const { results } = await walk(`${target().coordinatorUrl}/studies?limit=100`, { maxPages: 10 });
    studies = results.filter((s) => s.visible && !s.deleted).map((s) => s.item_id);
    expect(studies.length, 'two visible studies are needed').toBeGreaterThanOrEqual(2);
    member = await devToken('e2e-member', [studies[0]]);
    outsider = await devToken('e2e-outsider', [studies[1]]);
  });

  afterAll(async () => {
    if (uploaded) await files('DELETE', `/files/${uploaded.fileId}`);
  });

  it('upload, list, download and share the files of their study', async () => {
    const as = { bearer: member };
    uploaded = await upload(studies[0], sampleBytes(1500, 'e2e member'), { as, fileName: 'e2e-member.tsv' });
    const list = await files('GET', `/studies/${studies[0]}/files?limit=20`, { as });
    expect(list.status, show(list)).toBe(200);
    expect(list.body.results.map((f: any) => f.kf_id)).toContain(uploaded.fileId);
    const path = `/download/study/${studies[0]}/file/${uploaded.fileId}`;
    const download = await files('GET', path, { as });
    expect(download.status, show(download)).toBe(200);
    expect(download.bytes.equals(uploaded.bytes)).toBe(true);
    const signed = await files('POST', `/signed-url/study/${studies[0]}/files/${uploaded.fileId}`, { as });
    expect(signed.status, show(signed)).toBe(200);
    const viaLink = await call('GET', signed.body.url, { as: 'anonymous' });
    expect(viaLink.bytes.equals(uploaded.bytes)).toBe(true);
  });

  it('may neither delete files nor read developer tokens or the audit trail (403)', async () => {
    const as = { bearer: member };
    for (const [method, path] of [
      ['DELETE', `/files/${uploaded!.fileId}`],
      ['GET', '/developer-tokens'],
      ['GET', '/audit?limit=1'],
    ]) {
      const res = await files(method, path, { as });
      expect(res.status, `${method} ${path}: ${show(res)}`).toBe(403);
    }
  });

  it("learn nothing of another study's files: 403 by its study, 404 by the file's own id, in REST and DRS", async () => {
    const as = { bearer: outsider };
    const download = await files('GET', `/download/study/${studies[0]}/file/${uploaded!.fileId}`, { as });
    expect(download.status, show(download)).toBe(403);
    const byId = await files('GET', `/files/${uploaded!.fileId}`, { as });
    expect(byId.status, show(byId)).toBe(404);
    const drs = await files('GET', `/ga4gh/drs/v1/objects/${uploaded!.versionId}`, { as });
    expect(drs.status, show(drs)).toBe(404);
    expect(drs.body).toEqual({ msg: `No DRS object ${uploaded!.versionId}`, status_code: 404 });
  });

  it('read the coordinator like any token, and may not write to it (403)', async () => {
    const read = await coordinator('GET', '/releases?limit=1', { as: { bearer: member } });
    expect(read.status, show(read)).toBe(200);
    const write = await coordinator('POST', '/events', { as: { bearer: member }, body: { message: 'e2e' } });
    expect(write.status, show(write)).toBe(403);
  });
});
