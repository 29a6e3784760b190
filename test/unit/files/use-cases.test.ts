import { describe, expect, it, vi } from 'vitest';
import type { Caller } from '../../../functions/files/access.js';
import { filesConfigFromEnv } from '../../../functions/files/config.js';
import { download, mintSignedUrl } from '../../../functions/files/downloads.js';
import { runGraphql } from '../../../functions/files/graphql.js';
import type { VersionRecord } from '../../../functions/files/model.js';
import type { FilesDeps } from '../../../functions/files/ports.js';
import { hashToken, newDevToken, newSignedToken, tokenKind } from '../../../functions/files/tokens.js';
import { uploadPlan } from '../../../functions/files/uploads.js';
import { contentDisposition } from '../../../functions/files/views.js';
import { FakeClock } from '../../../functions/shared/clock.js';
import { log } from '../../../functions/shared/log.js';

const MiB = 1024 * 1024;
const baseEnv = { FILES_TABLE: 'files', STUDIES_TABLE: 'studies', FILES_BUCKET: 'bucket' };
const config = filesConfigFromEnv(baseEnv);

describe('configuration', () => {
  it('defaults to 30 s signed-URL tokens, 60 s S3 redirects and multipart above 100 MiB', () => {
    expect(config).toMatchObject({
      SIGNED_URL_TTL_SECONDS: 30,
      DOWNLOAD_URL_TTL_SECONDS: 60,
      MULTIPART_THRESHOLD_BYTES: 100 * MiB,
      DIRECT_DOWNLOAD_MAX_BYTES: MiB,
    });
  });

  it('refuses a token lifetime over 300 s, a redirect over 60 s, and names a missing bucket', () => {
    expect(() => filesConfigFromEnv({ ...baseEnv, SIGNED_URL_TTL_SECONDS: '301' })).toThrow(
      'SIGNED_URL_TTL_SECONDS',
    );
    expect(filesConfigFromEnv({ ...baseEnv, SIGNED_URL_TTL_SECONDS: '300' }).SIGNED_URL_TTL_SECONDS).toBe(
      300,
    );
    expect(() => filesConfigFromEnv({ ...baseEnv, DOWNLOAD_URL_TTL_SECONDS: '61' })).toThrow(
      'DOWNLOAD_URL_TTL_SECONDS',
    );
    expect(() => filesConfigFromEnv({ FILES_TABLE: 'files', STUDIES_TABLE: 'studies' })).toThrow(
      'FILES_BUCKET',
    );
  });
});

describe('tokens', () => {
  it('carry 256 random bits behind a prefix that tells the two kinds apart', () => {
    const signed = newSignedToken();
    const dev = newDevToken();
    expect(signed).toMatch(/^sfsu_[A-Za-z0-9_-]{43}$/);
    expect(dev).toMatch(/^sfdt_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(signed.slice(5), 'base64url')).toHaveLength(32);
    expect(tokenKind(signed)).toBe('signed');
    expect(tokenKind(dev)).toBe('developer');
    expect(tokenKind('sfsu_short')).toBe('unknown');
    expect(new Set(Array.from({ length: 1000 }, newSignedToken)).size).toBe(1000);
  });

  it('are stored as their SHA-256', () => {
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('upload plans', () => {
  it('use one PUT up to the threshold and parts above it, never more than 10,000', () => {
    expect(uploadPlan(100 * MiB, config)).toBeNull();
    expect(uploadPlan(100 * MiB + 1, config)).toEqual({ partSize: 64 * MiB, partCount: 2 });
    const huge = uploadPlan(5 * 1024 * 1024 * MiB, config)!;
    expect(huge.partCount).toBeLessThanOrEqual(10_000);
    expect(huge.partSize % MiB).toBe(0);
  });
});

describe('Content-Disposition', () => {
  it('names the file in ASCII and exactly in UTF-8', () => {
    expect(contentDisposition('résumé "v2".pdf')).toBe(
      `attachment; filename="r_sum_ _v2_.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22v2%22.pdf`,
    );
    expect(contentDisposition("it's (1).txt")).toBe(
      `attachment; filename="it's (1).txt"; filename*=UTF-8''it%27s%20%281%29.txt`,
    );
  });
});

const version: VersionRecord = {
  id: 'FV_CCCCCCCC',
  file_id: 'SF_BBBBBBBB',
  study_id: 'SD_AAAAAAAA',
  key: 'studies/SD_AAAAAAAA/files/SF_BBBBBBBB/versions/FV_CCCCCCCC',
  file_name: 'a.txt',
  size: 10,
  content_type: 'text/plain',
  sha256: '0'.repeat(64),
  state: 'available',
  created_at: '2026-01-01T00:00:00.000000Z',
  created_by: 'u',
  confirmed_at: '2026-01-01T00:00:01.000000Z',
  multipart: null,
};
const target = { studyId: version.study_id, fileId: version.file_id, versionId: version.id };
const info = { sourceIp: null, userAgent: null };

/** Ports as plain stubs: these tests are about the order of checks, not about DynamoDB or S3. */
function stubDeps(overrides: Partial<Record<keyof FilesDeps, unknown>> = {}) {
  const deps = {
    config,
    clock: new FakeClock(1_000_000),
    files: { getVersion: vi.fn(async () => version), getFileWithVersions: vi.fn(), listFiles: vi.fn() },
    signedTokens: {
      claim: vi.fn(async () => ({ ...version, created_by: 'minter', dev_token: null })),
      release: vi.fn(async () => undefined),
      create: vi.fn(async () => undefined),
    },
    devTokens: { findByHash: vi.fn(async () => null) },
    audit: { record: vi.fn(async () => undefined) },
    studies: { exists: vi.fn(async () => true) },
    store: { read: vi.fn(async () => new Uint8Array([1, 2, 3])), presignGet: vi.fn() },
    ...overrides,
  };
  return deps as unknown as FilesDeps & typeof deps;
}

const member = (groups: string[]): Caller => ({ kind: 'user', sub: 'm', isAdmin: false, groups });

describe('download authorization', () => {
  it('refuses a member of other studies before looking anything up', async () => {
    const deps = stubDeps();
    await expect(
      download(deps, { kind: 'caller', caller: member(['SD_ZZZZZZZZ']) }, target, info),
    ).rejects.toMatchObject({
      status: 403,
    });
    await expect(
      download(deps, { kind: 'caller', caller: { kind: 'anonymous' } }, target, info),
    ).rejects.toMatchObject({
      status: 401,
    });
    expect(deps.files.getVersion).not.toHaveBeenCalled();
  });

  it('gives a signed-URL claim back when reading the object fails, so the link is not burnt', async () => {
    const deps = stubDeps({ store: { read: vi.fn(async () => Promise.reject(new Error('S3 down'))) } });
    await expect(download(deps, { kind: 'token', token: newSignedToken() }, target, info)).rejects.toThrow(
      'S3 down',
    );
    expect(deps.signedTokens.release).toHaveBeenCalledTimes(1);
    expect(deps.audit.record).not.toHaveBeenCalled();
  });

  it('does not answer a download it could not audit', async () => {
    const deps = stubDeps({ audit: { record: vi.fn(async () => Promise.reject(new Error('audit down'))) } });
    await expect(download(deps, { kind: 'token', token: newSignedToken() }, target, info)).rejects.toThrow(
      'audit down',
    );
    expect(deps.signedTokens.release).toHaveBeenCalledTimes(1);
  });

  it('attributes a signed-URL download to whoever minted the link', async () => {
    const deps = stubDeps();
    const delivery = await download(deps, { kind: 'token', token: newSignedToken() }, target, info);
    expect(delivery.kind).toBe('inline');
    expect(deps.audit.record).toHaveBeenCalledWith(
      expect.objectContaining({
        action: 'download',
        method: 'signed_url',
        actor: 'minter',
        version_id: version.id,
      }),
    );
  });

  it('serves a version stored with a content type that is not a valid header value as octet-stream', async () => {
    const deps = stubDeps({
      files: { getVersion: vi.fn(async () => ({ ...version, content_type: 'text/plain; a=\u0001' })) },
    });
    const delivery = await download(
      deps,
      { kind: 'caller', caller: member([version.study_id]) },
      target,
      info,
    );
    expect(delivery).toMatchObject({ kind: 'inline', contentType: 'application/octet-stream' });
  });

  it('never lets a signed-URL token mint another signed URL', async () => {
    const deps = stubDeps();
    await expect(
      mintSignedUrl(deps, { kind: 'token', token: newSignedToken() }, target, 'https://x', info),
    ).rejects.toMatchObject({ status: 401 });
    expect(deps.signedTokens.claim).not.toHaveBeenCalled();
  });
});

describe('GraphQL errors', () => {
  it('hide internal failures behind a generic message with the request id, keeping the detail in the log', async () => {
    const logged = vi.spyOn(log, 'error').mockImplementation(() => undefined);
    const deps = stubDeps({
      files: { listFiles: vi.fn(async () => Promise.reject(new Error('secret table name'))) },
    });
    const res = await runGraphql(
      { query: '{ allFiles(studyId: "SD_AAAAAAAA") { totalCount } }' },
      { deps, caller: member(['SD_AAAAAAAA']), baseUrl: 'https://x', info },
      'req-1',
    );
    const body = res.body as { errors: { message: string; extensions: Record<string, unknown> }[] };
    expect(body.errors[0].message).toBe('Internal server error (request req-1)');
    expect(body.errors[0].extensions.code).toBe('INTERNAL_SERVER_ERROR');
    expect(JSON.stringify(body)).not.toContain('secret table name');
    expect(logged).toHaveBeenCalledWith(
      'graphql resolver failed',
      expect.objectContaining({ requestId: 'req-1', error: expect.stringContaining('secret table name') }),
    );
    logged.mockRestore();
  });
});
