import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectVersionsCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { downloadObject, restoreObjects } from '#ops/restore-object.js';

const s3mock = mockClient(S3Client);
afterEach(() => s3mock.reset());
const s3 = () => new S3Client({ region: 'eu-west-1' });
const BUCKET = 'files-bucket';
const KEY = 'studies/SD_1/files/SF_1/versions/FV_1';
const at = (m: number) => new Date(Date.UTC(2026, 10, 30, 10, m));

describe('npm run restore:object', () => {
  it('removes the delete marker of a deleted object, making its newest version current again', async () => {
    s3mock.on(ListObjectVersionsCommand).resolves({
      Versions: [{ Key: KEY, VersionId: 'v1', IsLatest: false, LastModified: at(1) }],
      DeleteMarkers: [{ Key: KEY, VersionId: 'm1', IsLatest: true, LastModified: at(5) }],
    });
    expect(await restoreObjects(s3(), { bucket: BUCKET, key: KEY })).toEqual([
      { key: KEY, outcome: 'restored', versionId: 'v1' },
    ]);
    expect(s3mock.commandCalls(DeleteObjectCommand).map((c) => c.args[0].input)).toEqual([
      { Bucket: BUCKET, Key: KEY, VersionId: 'm1' },
    ]);
  });

  it('leaves an object that was not deleted alone, and says which are gone for good', async () => {
    const other = KEY.replace('FV_1', 'FV_2');
    const expired = KEY.replace('FV_1', 'FV_3');
    s3mock.on(ListObjectVersionsCommand).resolves({
      Versions: [{ Key: other, VersionId: 'v2', IsLatest: true, LastModified: at(1) }],
      DeleteMarkers: [{ Key: expired, VersionId: 'm3', IsLatest: true, LastModified: at(2) }],
    });
    const out = await restoreObjects(s3(), { bucket: BUCKET, prefix: 'studies/SD_1/files/SF_1/' });
    expect(out).toEqual([
      { key: other, outcome: 'present', versionId: 'v2' },
      { key: expired, outcome: 'gone' },
    ]);
    expect(s3mock.commandCalls(DeleteObjectCommand)).toEqual([]);
  });

  it('with --out, writes the newest version to a file and changes nothing', async () => {
    s3mock.on(ListObjectVersionsCommand).resolves({
      Versions: [
        { Key: KEY, VersionId: 'old', IsLatest: false, LastModified: at(1) },
        { Key: KEY, VersionId: 'new', IsLatest: false, LastModified: at(3) },
      ],
      DeleteMarkers: [{ Key: KEY, VersionId: 'm1', IsLatest: true, LastModified: at(5) }],
    });
    s3mock
      .on(GetObjectCommand, { VersionId: 'new' })
      .resolves({ Body: Readable.from([Buffer.from('bytes')]) as never });
    const out = join(mkdtempSync(join(tmpdir(), 'restore-object-')), 'file');
    expect(await downloadObject(s3(), { bucket: BUCKET, key: KEY, out })).toEqual({
      key: KEY,
      outcome: 'downloaded',
      versionId: 'new',
    });
    expect(readFileSync(out, 'utf8')).toBe('bytes');
    expect(s3mock.commandCalls(DeleteObjectCommand)).toEqual([]);
  });
});
