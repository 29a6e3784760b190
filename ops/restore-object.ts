import { createWriteStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectVersionsCommand,
  type ListObjectVersionsCommandOutput,
  type S3Client,
} from '@aws-sdk/client-s3';

/**
 * `npm run restore:object -- --bucket <name> --key <key> | --prefix <prefix> [--out <file>]`: brings back objects
 * deleted from the versioned files bucket (docs/operations.md, Bring back a deleted study file). A delete in a
 * versioned bucket only puts a delete marker on top of the object's versions; removing the marker makes the newest
 * version current again, bytes and all, as long as the bucket's lifecycle rule has not expired it yet
 * (`noncurrentVersionDays`). With `--out`, the newest version of one key is written to a file instead and the bucket
 * is left as it is. A key that was never deleted is left alone and reported as such.
 */
export interface ObjectOutcome {
  key: string;
  /** restored: the delete marker removed; present: not deleted; gone: no version left to restore. */
  outcome: 'restored' | 'present' | 'gone' | 'downloaded';
  versionId?: string;
}

interface Entry {
  key: string;
  versionId: string;
  latest: boolean;
  marker: boolean;
  at: number;
}

async function entriesUnder(s3: S3Client, bucket: string, prefix: string): Promise<Entry[]> {
  const out: Entry[] = [];
  let page: ListObjectVersionsCommandOutput | undefined;
  do {
    page = await s3.send(
      new ListObjectVersionsCommand({
        Bucket: bucket,
        Prefix: prefix,
        KeyMarker: page?.NextKeyMarker,
        VersionIdMarker: page?.NextVersionIdMarker,
      }),
    );
    for (const v of page.Versions ?? [])
      out.push({
        key: v.Key ?? '',
        versionId: v.VersionId ?? 'null',
        latest: Boolean(v.IsLatest),
        marker: false,
        at: v.LastModified?.getTime() ?? 0,
      });
    for (const m of page.DeleteMarkers ?? [])
      out.push({
        key: m.Key ?? '',
        versionId: m.VersionId ?? 'null',
        latest: Boolean(m.IsLatest),
        marker: true,
        at: m.LastModified?.getTime() ?? 0,
      });
  } while (page.IsTruncated);
  return out;
}

/** Restores every deleted object of `key` (exactly) or under `prefix`, newest version made current again. */
export async function restoreObjects(
  s3: S3Client,
  req: { bucket: string; key?: string; prefix?: string },
): Promise<ObjectOutcome[]> {
  const prefix = req.key ?? req.prefix;
  if (!prefix) throw new Error('give --key or --prefix');
  const entries = (await entriesUnder(s3, req.bucket, prefix)).filter((e) => !req.key || e.key === req.key);
  const byKey = new Map<string, Entry[]>();
  for (const e of entries) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e]);
  const outcomes: ObjectOutcome[] = [];
  for (const [key, versions] of byKey) {
    const current = versions.find((v) => v.latest);
    const markers = versions.filter((v) => v.marker);
    const kept = versions.filter((v) => !v.marker).sort((a, b) => b.at - a.at);
    if (current && !current.marker) {
      outcomes.push({ key, outcome: 'present', versionId: current.versionId });
      continue;
    }
    if (kept.length === 0) {
      outcomes.push({ key, outcome: 'gone' });
      continue;
    }
    // Every marker newer than the newest version goes (a key deleted twice has two).
    for (const m of markers.filter((x) => x.at >= kept[0].at))
      await s3.send(new DeleteObjectCommand({ Bucket: req.bucket, Key: key, VersionId: m.versionId }));
    outcomes.push({ key, outcome: 'restored', versionId: kept[0].versionId });
  }
  if (req.key && outcomes.length === 0) outcomes.push({ key: req.key, outcome: 'gone' });
  return outcomes;
}

/** Writes the newest version of `key` to `out`, deleted or not, and changes nothing in the bucket. */
export async function downloadObject(
  s3: S3Client,
  req: { bucket: string; key: string; out: string },
): Promise<ObjectOutcome> {
  const kept = (await entriesUnder(s3, req.bucket, req.key))
    .filter((e) => e.key === req.key && !e.marker)
    .sort((a, b) => b.at - a.at);
  if (kept.length === 0) return { key: req.key, outcome: 'gone' };
  const got = await s3.send(
    new GetObjectCommand({ Bucket: req.bucket, Key: req.key, VersionId: kept[0].versionId }),
  );
  await pipeline(got.Body as Readable, createWriteStream(req.out));
  return { key: req.key, outcome: 'downloaded', versionId: kept[0].versionId };
}
