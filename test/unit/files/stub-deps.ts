import { vi } from 'vitest';
import type { Caller } from '#functions/files/access.js';
import { filesConfigFromEnv } from '#functions/files/config.js';
import type { VersionRecord } from '#functions/files/model.js';
import type { FilesDeps } from '#functions/files/ports.js';
import { FakeClock } from '#functions/shared/clock.js';

/** Files use cases' ports as plain stubs, for the tests about the order of checks (not about DynamoDB or S3). */
const baseEnv = { FILES_TABLE: 'files', STUDIES_TABLE: 'studies', FILES_BUCKET: 'bucket' };
const config = filesConfigFromEnv(baseEnv);

export const version: VersionRecord = {
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
export const target = { studyId: version.study_id, fileId: version.file_id, versionId: version.id };
export const info = { sourceIp: null, userAgent: null };

/** Ports as plain stubs: these tests are about the order of checks, not about DynamoDB or S3. */
export function stubDeps(overrides: Partial<Record<keyof FilesDeps, unknown>> = {}) {
  const deps = {
    config,
    clock: new FakeClock(1_000_000),
    files: { getVersion: vi.fn(async () => version), getFileWithLatest: vi.fn(), listFiles: vi.fn() },
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

export const member = (groups: string[]): Caller => ({ kind: 'user', sub: 'm', isAdmin: false, groups });
