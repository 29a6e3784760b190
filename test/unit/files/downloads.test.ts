import { describe, expect, it, vi } from 'vitest';
import { download, mintSignedUrl } from '#functions/files/downloads.js';
import { newSignedToken } from '#functions/files/tokens.js';

import { info, member, stubDeps, target, version } from './stub-deps.js';

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
