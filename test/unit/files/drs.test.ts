import { describe, expect, it, vi } from 'vitest';
import type { Caller } from '#functions/files/access.js';
import {
  authenticate,
  bulkObjects,
  isObjectIdShape,
  localObjectId,
  resolveObject,
} from '#functions/files/drs.js';
import { drsConfigFromEnv } from '#functions/files/drs-config.js';
import type { DrsContext } from '#functions/files/drs-model.js';
import { drsErrorBody } from '#functions/files/drs-views.js';
import type { FileRecord, VersionRecord } from '#functions/files/model.js';
import type { FileRepository } from '#functions/files/ports.js';
import { newDevToken, newSignedToken } from '#functions/files/tokens.js';
import { FakeClock } from '#functions/shared/clock.js';
import { log } from '#functions/shared/log.js';

const ctx: DrsContext = { host: 'drs.example.org', issuer: 'https://idp.example.org' };

describe('DRS settings', () => {
  it('default to a bulk limit of 200 and refuse one under 1 or over 1000, naming the variable', () => {
    expect(drsConfigFromEnv({}).DRS_MAX_BULK_REQUEST_LENGTH).toBe(200);
    expect(drsConfigFromEnv({ DRS_MAX_BULK_REQUEST_LENGTH: '1000' }).DRS_MAX_BULK_REQUEST_LENGTH).toBe(1000);
    for (const bad of ['0', '1001', 'many'])
      expect(() => drsConfigFromEnv({ DRS_MAX_BULK_REQUEST_LENGTH: bad })).toThrow(
        'DRS_MAX_BULK_REQUEST_LENGTH',
      );
    expect(() => drsConfigFromEnv({ DRS_ORGANIZATION_URL: 'not a url' })).toThrow('DRS_ORGANIZATION_URL');
  });
});

describe('object ids', () => {
  it('take a hostname-based drs:// URI of this host (any case, percent-encoded id) and nothing of another', () => {
    expect(localObjectId('FV_0000AAAA', ctx.host)).toBe('FV_0000AAAA');
    expect(localObjectId('drs://drs.example.org/FV_0000AAAA', ctx.host)).toBe('FV_0000AAAA');
    expect(localObjectId('DRS://DRS.Example.ORG/FV%5F0000AAAA', ctx.host)).toBe('FV_0000AAAA');
    expect(localObjectId('drs://other.example.org/FV_0000AAAA', ctx.host)).toBeNull();
    expect(localObjectId('drs://drs.example.org:8443/FV_0000AAAA', ctx.host)).toBeNull();
    expect(localObjectId('drs://drs.example.org/%zz', ctx.host)).toBeNull();
    expect(localObjectId('drs://drs.42:314159', ctx.host)).toBe('drs://drs.42:314159');
  });

  it('can name an object only when they are a version or file id', () => {
    expect(isObjectIdShape('FV_0000AAAA', ctx.host)).toBe(true);
    expect(isObjectIdShape('SF_0000AAAA', ctx.host)).toBe(true);
    expect(isObjectIdShape('SD_0000AAAA', ctx.host)).toBe(false);
    expect(isObjectIdShape('drs://other.example.org/FV_0000AAAA', ctx.host)).toBe(false);
  });
});

const file: FileRecord = {
  id: 'SF_BBBBBBBB',
  study_id: 'SD_AAAAAAAA',
  name: 'f',
  description: null,
  created_at: '2026-01-01T00:00:00.000000Z',
  created_by: 'u',
};
const version = (id: string, state: VersionRecord['state'], createdAt: string): VersionRecord => ({
  id,
  file_id: file.id,
  study_id: file.study_id,
  key: id,
  file_name: 'f.txt',
  size: 1,
  content_type: 'text/plain',
  sha256: '0'.repeat(64),
  state,
  created_at: createdAt,
  created_by: 'u',
  confirmed_at: null,
  multipart: null,
});
const versions = [
  version('FV_00000001', 'available', '2026-01-01T00:00:01.000000Z'),
  version('FV_00000002', 'available', '2026-01-01T00:00:02.000000Z'),
  // Newer, but not an object: not available.
  version('FV_00000003', 'pending', '2026-01-01T00:00:03.000000Z'),
];
function files(): Pick<FileRepository, 'fileIdOfVersion' | 'getFileWithLatest' | 'getFile' | 'getVersion'> {
  return {
    fileIdOfVersion: vi.fn(async (id: string) => (versions.some((v) => v.id === id) ? file.id : null)),
    // The repository's latest is the newest available version (its key item); FV_00000003 is newer but pending.
    getFileWithLatest: vi.fn(async (id: string) => (id === file.id ? { file, latest: versions[1] } : null)),
    getFile: vi.fn(async (id: string) => (id === file.id ? file : null)),
    getVersion: vi.fn(async (fileId: string, id: string) =>
      fileId === file.id ? (versions.find((v) => v.id === id) ?? null) : null,
    ),
  };
}
const member: Caller = { kind: 'user', sub: 'm', isAdmin: false, groups: [file.study_id] };
const stranger: Caller = { kind: 'user', sub: 's', isAdmin: false, groups: ['SD_CCCCCCCC'] };

describe('resolving an object', () => {
  it('gives a file id its newest available version, and a version id itself', async () => {
    const deps = { files: files() as FileRepository };
    expect((await resolveObject(deps, member, file.id, ctx)).version.id).toBe('FV_00000002');
    expect((await resolveObject(deps, member, 'FV_00000001', ctx)).version.id).toBe('FV_00000001');
  });

  it('answers an unavailable version, an unknown id and another study’s object with the same 404', async () => {
    const deps = { files: files() as FileRepository };
    for (const [caller, id] of [
      [member, 'FV_00000003'],
      [member, 'FV_ZZZZZZZZ'],
      [stranger, 'FV_00000001'],
      [stranger, file.id],
    ] as const) {
      await expect(resolveObject(deps, caller, id, ctx)).rejects.toMatchObject({
        status: 404,
        message: `No DRS object ${id}`,
      });
    }
  });

  it('looks nothing up for an id of another host or of no known shape', async () => {
    const deps = { files: files() as FileRepository };
    for (const id of ['drs://elsewhere.org/FV_00000001', 'SD_AAAAAAAA', 'x'])
      await expect(resolveObject(deps, member, id, ctx)).rejects.toMatchObject({ status: 404 });
    expect(deps.files.fileIdOfVersion).not.toHaveBeenCalled();
    expect(deps.files.getFileWithLatest).not.toHaveBeenCalled();
  });
});

describe('authenticating a DRS request', () => {
  const clock = new FakeClock();
  const devTokens = (known: boolean) => ({
    findByHash: vi.fn(async () =>
      known
        ? { name: 'ci', hint: 'sfdt_abcd', created_at: 'x', created_by: 'a', expires_at: null, studies: null }
        : null,
    ),
  });

  it('turns a known developer token into a developer, and refuses unknown ones and signed-URL tokens', async () => {
    const token = newDevToken();
    expect(await authenticate({ devTokens: devTokens(true), clock }, { kind: 'token', token })).toEqual({
      kind: 'developer',
      name: 'ci',
      studies: null,
    });
    await expect(
      authenticate({ devTokens: devTokens(false), clock }, { kind: 'token', token }),
    ).rejects.toMatchObject({
      status: 401,
    });
    const signed = devTokens(true);
    await expect(
      authenticate({ devTokens: signed, clock }, { kind: 'token', token: newSignedToken() }),
    ).rejects.toMatchObject({ status: 401 });
    expect(signed.findByHash).not.toHaveBeenCalled();
  });

  it('refuses anonymous callers, saying so when they sent passports', async () => {
    const anonymous = { kind: 'caller' as const, caller: { kind: 'anonymous' as const } };
    await expect(authenticate({ devTokens: devTokens(true), clock }, anonymous)).rejects.toMatchObject({
      status: 401,
    });
    await expect(
      authenticate({ devTokens: devTokens(true), clock }, anonymous, { passports: true }),
    ).rejects.toThrow('GA4GH Passports are not supported');
  });
});

describe('bulk requests', () => {
  const drs = drsConfigFromEnv({ DRS_MAX_BULK_REQUEST_LENGTH: '3' });

  it('answer 413 over the limit before looking anything up', async () => {
    const deps = { files: files() as FileRepository, drs };
    await expect(bulkObjects(deps, member, ['a', 'b', 'c', 'd'], ctx)).rejects.toMatchObject({ status: 413 });
    expect(deps.files.fileIdOfVersion).not.toHaveBeenCalled();
  });

  it('report a failed lookup as a 500 for that id alone, logging the cause', async () => {
    const logged = vi.spyOn(log, 'error').mockImplementation(() => undefined);
    const repo = files();
    repo.fileIdOfVersion = vi.fn(async (id: string) => {
      if (id === 'FV_00000002') throw new Error('throttled');
      return file.id;
    });
    const out = await bulkObjects(
      { files: repo as FileRepository, drs },
      member,
      ['FV_00000001', 'FV_00000002'],
      ctx,
    );
    expect(out.summary).toEqual({ requested: 2, resolved: 1, unresolved: 1 });
    expect(out.unresolved).toEqual([{ error_code: 500, object_ids: ['FV_00000002'] }]);
    expect(logged).toHaveBeenCalledWith('bulk DRS item failed', expect.objectContaining({}));
    logged.mockRestore();
  });
});

describe('the DRS error body', () => {
  it('is {msg, status_code}, with the fields of a validation error in msg', () => {
    expect(drsErrorBody({ status: 404, code: 'not_found', message: 'No DRS object x' })).toEqual({
      msg: 'No DRS object x',
      status_code: 404,
    });
    expect(
      drsErrorBody({
        status: 400,
        code: 'validation_error',
        message: 'Invalid body: bulk_object_ids',
        fields: { bulk_object_ids: ['Required'] },
      }),
    ).toEqual({ msg: 'Invalid body: bulk_object_ids (bulk_object_ids: Required)', status_code: 400 });
  });
});
