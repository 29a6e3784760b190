import { randomUUID } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { FilesClient, FilesComponents } from './api.js';
import { CliError, readJson } from './config.js';
import { must, nextQuery } from './http.js';
import type { ManifestItem } from './manifest-file.js';

/**
 * What a whole-study download fetches, and where each file goes: the rows of the study's manifest (or of a manifest
 * file, completed from the DRS API), each with a local name, and the sync state that tells which files in the
 * directory are already the ones wanted.
 */
type DrsObject = FilesComponents['schemas']['DrsObject'];
export type SkippedFile = FilesComponents['schemas']['SkippedFile'];

export interface Entry {
  /** What the DRS API resolves (a version id, or a drs:// URI from a manifest). */
  objectId: string;
  fileId: string;
  versionId: string;
  name: string;
  size: number;
  sha256: string;
  createdAt: string;
  /** The file's name in the directory: its name, or with its file id when another file has the same name. */
  local: string;
}

export interface Unresolved {
  objectId: string;
  error: string;
}

type Raw = Omit<Entry, 'local'>;

/** Every row of a study's manifest (all pages), and the files it skips with their reasons. */
export async function studyEntries(
  files: FilesClient,
  studyId: string,
): Promise<{ entries: Raw[]; skipped: SkippedFile[] }> {
  const entries: Raw[] = [];
  const skipped: SkippedFile[] = [];
  let query: Record<string, unknown> | undefined = { limit: 100 };
  while (query) {
    const page = await must(
      files.GET('/studies/{studyId}/manifest', {
        params: { path: { studyId }, query: query as { limit?: number } },
      }),
      'GET manifest',
    );
    if (typeof page === 'string') throw new CliError('the manifest came back as TSV, not JSON');
    for (const r of page.results)
      entries.push({
        objectId: r.version_id,
        fileId: r.file_id,
        versionId: r.version_id,
        name: r.name,
        size: r.size,
        sha256: r.sha256,
        createdAt: r.created_at,
      });
    skipped.push(...page.skipped);
    query = nextQuery(page.next);
  }
  return { entries, skipped };
}

/** The local part of an object id: `FV_…` of `drs://<host>/FV_…`, or the id itself. */
const bareId = (objectId: string) => /^drs:\/\/[^/]+\/(.+)$/i.exec(objectId)?.[1] ?? objectId;

const complete = (i: ManifestItem): Raw | null =>
  i.versionId && i.fileId && i.name !== undefined && i.size !== undefined && i.sha256
    ? {
        objectId: i.objectId,
        fileId: i.fileId,
        versionId: i.versionId,
        name: i.name,
        size: i.size,
        sha256: i.sha256,
        createdAt: i.createdAt ?? '',
      }
    : null;

function fromObject(item: ManifestItem, o: DrsObject): Raw | null {
  const sha256 = o.checksums.find((c) => c.type === 'sha-256')?.checksum;
  if (!sha256) return null;
  return {
    objectId: item.objectId,
    fileId: o.aliases[0] ?? item.fileId ?? o.id,
    versionId: o.id,
    name: o.name,
    size: o.size,
    sha256,
    createdAt: o.created_time,
  };
}

/** The DRS API's longest bulk request (service-info), so a batch is never refused for its length. */
export async function maxBulkLength(files: FilesClient): Promise<number> {
  const info = await must(files.GET('/ga4gh/drs/v1/service-info'), 'GET service-info');
  return Math.max(1, Math.min(info.maxBulkRequestLength, 100));
}

/**
 * The items of a manifest file as entries: rows that carry everything as they are, the others (a bare list of
 * drs:// URIs) resolved with the DRS API's bulk route. Items it cannot resolve come back with its status.
 */
export async function manifestEntries(
  files: FilesClient,
  items: ManifestItem[],
  batch: number,
): Promise<{ entries: Raw[]; unresolved: Unresolved[] }> {
  const distinct = [...new Map(items.map((i) => [i.objectId, i])).values()];
  const entries: Raw[] = [];
  const unresolved: Unresolved[] = [];
  const missing: ManifestItem[] = [];
  for (const i of distinct) {
    const ready = complete(i);
    if (ready) entries.push(ready);
    else missing.push(i);
  }
  for (let at = 0; at < missing.length; at += batch) {
    const chunk = missing.slice(at, at + batch);
    const answer = await must(
      files.POST('/ga4gh/drs/v1/objects', { body: { bulk_object_ids: chunk.map((i) => i.objectId) } }),
      'POST DRS objects',
    );
    const statusOf = new Map<string, number>();
    for (const u of answer.unresolved_drs_objects)
      for (const id of u.object_ids) statusOf.set(id, u.error_code);
    for (const item of chunk) {
      const id = bareId(item.objectId);
      const o = answer.resolved_drs_object.find((x) => x.id === id || x.aliases.includes(id));
      const entry = o ? fromObject(item, o) : null;
      if (entry) entries.push(entry);
      else {
        const status = statusOf.get(item.objectId);
        unresolved.push({
          objectId: item.objectId,
          error: status ? `the DRS API answered ${status} for it` : 'the DRS API did not resolve it',
        });
      }
    }
  }
  return { entries, unresolved };
}

/** A name that is safe as one file in the directory: never a path, `.` or `..`, or a hidden state file. */
function safeName(name: string, fallback: string): string {
  const flat = name.replace(/[/\\\0]/g, '_').trim();
  return flat === '' || flat === '.' || flat === '..' || flat === SYNC_STATE_FILE ? fallback : flat;
}

/** `reads.fastq.gz` with the file id before its extensions: `reads.SF_….fastq.gz`. */
export function withFileId(name: string, fileId: string): string {
  const dot = name.indexOf('.', 1);
  return dot < 0 ? `${name}.${fileId}` : `${name.slice(0, dot)}.${fileId}${name.slice(dot)}`;
}

/**
 * Local names: each file's own name, except where several files share a name. Then the oldest (by the time its
 * version was uploaded) keeps the name and each of the others gets its file id as a suffix, so nothing is
 * overwritten, and a file of that name uploaded later never renames the ones already downloaded.
 */
export function assignLocalNames(entries: Raw[]): Entry[] {
  const groups = new Map<string, Raw[]>();
  for (const e of entries) {
    const name = safeName(e.name, e.fileId);
    groups.set(name, [...(groups.get(name) ?? []), e]);
  }
  const out: Entry[] = [];
  for (const [name, group] of groups) {
    group.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.fileId.localeCompare(b.fileId));
    group.forEach((e, i) => {
      out.push({ ...e, local: i === 0 ? name : withFileId(name, e.fileId) });
    });
  }
  return out;
}

/** The one hidden file a download keeps in its directory: which version each file there is, and its stat. */
export const SYNC_STATE_FILE = '.drc-sync.json';

const syncRecord = z.object({
  file_id: z.string(),
  version_id: z.string(),
  size: z.number(),
  sha256: z.string(),
  mtime_ms: z.number(),
});
const syncState = z.object({ version: z.literal(1), files: z.record(z.string(), syncRecord) });
export type SyncRecord = z.infer<typeof syncRecord>;
export type SyncState = z.infer<typeof syncState>;

export function readSyncState(dir: string): SyncState {
  return readJson(join(dir, SYNC_STATE_FILE), syncState) ?? { version: 1, files: {} };
}

/** Written whole, then renamed over the old one: a reader never sees half of it. */
export function writeSyncState(dir: string, state: SyncState): void {
  const path = join(dir, SYNC_STATE_FILE);
  const tmp = `${path}.${randomUUID()}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(state, null, 1)}\n`);
  renameSync(tmp, path);
}
