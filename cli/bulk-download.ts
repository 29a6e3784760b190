import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { mapLimit } from '#functions/shared/concurrency.js';
import type { FilesClient } from './api.js';
import { CliError } from './config.js';
import {
  assignLocalNames,
  type Entry,
  manifestEntries,
  maxBulkLength,
  readSyncState,
  type SkippedFile,
  type SyncState,
  studyEntries,
  type Unresolved,
  writeSyncState,
} from './download-plan.js';
import { describeFetchError, must } from './http.js';
import { readManifest } from './manifest-file.js';
import type { Output } from './output.js';
import { type BatchBar, batchBar } from './progress.js';
import { fetchIntoFile, fileDigest, sizeOf, TransferRefused } from './transfer.js';

/**
 * `drc files download <study> --all -d DIR` and `drc files download --manifest FILE -d DIR`: every file of a study
 * (its manifest), or every object a manifest names, N at a time, into one directory, as a sync:
 *
 * - a file already in DIR with the wanted bytes is left alone (the sync state, `.drc-sync.json`, remembers the
 *   version and stat of each file it wrote or checked, so an unchanged file is not even hashed again; any other file
 *   of that name is hashed and compared); a run with nothing to do writes nothing in DIR;
 * - each transfer goes through a presigned URL from the DRS API (bulk, with each URL's expiry; a URL refused as
 *   expired is minted again), into a `.part` file that a later run continues with Range, renamed once its size and
 *   SHA-256 are the record's (cli/transfer.ts);
 * - files that share a name are written side by side (download-plan.ts, assignLocalNames);
 * - one progress bar for the whole, a line per failure or skipped file, and a summary; any failure is exit 1.
 */
export interface BulkArgs {
  study?: string;
  manifest?: string;
  dir: string;
  jobs: number;
}

interface Failed {
  file_id: string | null;
  version_id: string | null;
  name: string;
  error: string;
}

export interface BulkResult {
  directory: string;
  files: number;
  downloaded: { file_id: string; version_id: string; name: string; size: number; resumed_from: number }[];
  present: number;
  skipped: SkippedFile[];
  failed: Failed[];
  bytes: number;
  seconds: number;
}

/** Tries per file: a broken connection or an expired URL is tried again, from where the part file stops. */
const ATTEMPTS = 3;
/** A URL with less than this left is minted again before it is used. */
const URL_MARGIN_MS = 60_000;

/** Presigned URLs from the DRS API's bulk access route, minted for the next files in line, a batch at a time. */
class AccessUrls {
  private readonly urls = new Map<string, { url: string; expiresAtMs: number }>();
  private readonly errors = new Map<string, string>();
  private signing: Promise<void> = Promise.resolve();
  constructor(
    private readonly files: FilesClient,
    private readonly queue: Entry[],
    private readonly batch: number,
  ) {}

  private fresh(objectId: string): string | undefined {
    const u = this.urls.get(objectId);
    return u && u.expiresAtMs - Date.now() > URL_MARGIN_MS ? u.url : undefined;
  }

  async get(entry: Entry, again = false): Promise<string> {
    if (again) this.urls.delete(entry.objectId);
    this.errors.delete(entry.objectId);
    this.signing = this.signing.then(async () => {
      if (this.fresh(entry.objectId)) return;
      const from = Math.max(0, this.queue.indexOf(entry));
      const ids = [
        entry.objectId,
        ...this.queue
          .slice(from + 1)
          .map((e) => e.objectId)
          .filter((id) => !this.fresh(id)),
      ].slice(0, this.batch);
      const answer = await must(
        this.files.POST('/ga4gh/drs/v1/objects/access', {
          body: {
            bulk_object_access_ids: ids.map((id) => ({ bulk_object_id: id, bulk_access_ids: ['https'] })),
          },
        }),
        'POST DRS access',
      ).catch((err: unknown) => {
        for (const id of ids) this.errors.set(id, (err as Error).message);
      });
      for (const r of answer?.resolved_drs_object_access_urls ?? [])
        this.urls.set(r.drs_object_id, { url: r.url, expiresAtMs: Date.parse(r.expires_at) });
      for (const u of answer?.unresolved_drs_objects ?? [])
        for (const id of u.object_ids) this.errors.set(id, `the DRS API answered ${u.error_code} for it`);
    });
    await this.signing;
    const url = this.fresh(entry.objectId) ?? this.urls.get(entry.objectId)?.url;
    if (url) return url;
    throw new CliError(this.errors.get(entry.objectId) ?? 'no access URL was minted for it');
  }
}

/** Whether DIR already holds the entry's bytes under its name: by the sync state's record, or by hashing it. */
async function present(dir: string, e: Entry, state: SyncState): Promise<boolean> {
  const path = join(dir, e.local);
  if (!existsSync(path)) return false;
  const st = statSync(path);
  if (!st.isFile()) throw new CliError(`${path} is in the way: it is not a file`);
  const rec = state.files[e.local];
  if (
    rec &&
    rec.version_id === e.versionId &&
    rec.sha256 === e.sha256 &&
    rec.size === st.size &&
    rec.mtime_ms === st.mtimeMs
  )
    return true;
  if (st.size !== e.size) return false;
  const digest = await fileDigest(path);
  if (digest.sha256 !== e.sha256) return false;
  record(state, dir, e);
  return true;
}

function record(state: SyncState, dir: string, e: Entry): void {
  state.files[e.local] = {
    file_id: e.fileId,
    version_id: e.versionId,
    size: e.size,
    sha256: e.sha256,
    mtime_ms: statSync(join(dir, e.local)).mtimeMs,
  };
}

/** One file, with its retries: an expired URL is minted again, a broken transfer continues where it stopped. */
async function transfer(dir: string, e: Entry, urls: AccessUrls, bar: BatchBar): Promise<number> {
  const part = join(dir, `${e.local}.${e.versionId}.part`);
  let resumedFrom = 0;
  for (let attempt = 1; ; attempt++) {
    const before = sizeOf(part);
    try {
      const url = await urls.get(e, attempt > 1);
      const r = await fetchIntoFile({
        part,
        dest: join(dir, e.local),
        expected: e,
        open: (offset) =>
          fetch(url, { headers: offset > 0 ? { Range: `bytes=${offset}-` } : {} }).catch((err: unknown) => {
            throw new CliError(describeFetchError(url, err));
          }),
        onBytes: (n) => bar.tick(n),
      });
      if (attempt === 1) resumedFrom = r.resumedFrom;
      return resumedFrom;
    } catch (err) {
      // What this attempt had received stays counted: a retry continues after it.
      if (attempt === 1) resumedFrom = before;
      const retryable = !(err instanceof TransferRefused) || err.status === 403 || err.status >= 500;
      if (attempt >= ATTEMPTS || !retryable) throw err;
      await new Promise((r) => setTimeout(r, 300 * attempt));
    }
  }
}

export async function bulkDownload(files: FilesClient, args: BulkArgs, o: Output): Promise<BulkResult> {
  const started = Date.now();
  const dir = resolve(args.dir);
  const batch = await maxBulkLength(files);
  let raw: Omit<Entry, 'local'>[];
  let skipped: SkippedFile[] = [];
  let unresolved: Unresolved[] = [];
  if (args.manifest)
    ({ entries: raw, unresolved } = await manifestEntries(files, readManifest(args.manifest), batch));
  else ({ entries: raw, skipped } = await studyEntries(files, args.study ?? ''));
  const entries = assignLocalNames(raw);
  mkdirSync(dir, { recursive: true });

  for (const s of skipped) o.err(`skipped ${s.name} (${s.file_id}): ${s.reason}`);
  const failed: Failed[] = unresolved.map((u) => ({
    file_id: null,
    version_id: null,
    name: u.objectId,
    error: u.error,
  }));
  for (const f of failed) o.err(`failed ${f.name}: ${f.error}`);

  const state = readSyncState(dir);
  const before = JSON.stringify(state);
  const wanted: Entry[] = [];
  await mapLimit(entries, args.jobs, async (e) => {
    if (!(await present(dir, e, state))) wanted.push(e);
  });
  wanted.sort((a, b) => entries.indexOf(a) - entries.indexOf(b));

  const total = wanted.reduce((sum, e) => sum + e.size, 0);
  const already = wanted.reduce((sum, e) => sum + sizeOf(join(dir, `${e.local}.${e.versionId}.part`)), 0);
  const bar = batchBar(o, 'downloading', total, wanted.length, already);
  const urls = new AccessUrls(files, wanted, batch);
  const downloaded: BulkResult['downloaded'] = [];
  let bytes = 0;
  try {
    await mapLimit(wanted, args.jobs, async (e) => {
      try {
        const resumedFrom = await transfer(dir, e, urls, bar);
        record(state, dir, e);
        bytes += e.size - resumedFrom;
        downloaded.push({
          file_id: e.fileId,
          version_id: e.versionId,
          name: e.local,
          size: e.size,
          resumed_from: resumedFrom,
        });
      } catch (err) {
        const error = err instanceof Error ? err.message : String(err);
        failed.push({ file_id: e.fileId, version_id: e.versionId, name: e.local, error });
        bar.log(`failed ${e.local} (${e.fileId}): ${error}`);
      } finally {
        bar.fileDone();
      }
    });
  } finally {
    bar.stop();
    // Only a run that found something to do writes the state: a no-op sync leaves DIR as it was.
    if (JSON.stringify(state) !== before) writeSyncState(dir, state);
  }
  return {
    directory: dir,
    files: entries.length + unresolved.length,
    downloaded,
    present: entries.length - wanted.length,
    skipped,
    failed,
    bytes,
    seconds: (Date.now() - started) / 1000,
  };
}
