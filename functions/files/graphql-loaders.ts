import DataLoader from 'dataloader';
import type { Page } from '../shared/list.js';
import type { DevTokenRecord, FileRecord, FileSummary, VersionRecord } from './model.js';
import type { DevTokenRepository, FileRepository, Listing, StudyDirectory } from './ports.js';

/**
 * The repositories one GraphQL request reads through: the same ports, backed by DataLoaders that live for this one
 * request. Lookups by key are batched (the files and versions a resolver tick asks for are one BatchGetItem per 100)
 * and every read is memoized: a file's latestVersion asked for under ten aliases is read once, and a study's page
 * asked for twice is one page. The use cases and resolvers do not change; writes go straight through. Nothing is
 * kept between requests, so no request sees another's answers.
 */
type Reads = Pick<FilesDepsLike, 'files' | 'studies' | 'devTokens'>;
interface FilesDepsLike {
  files: FileRepository;
  studies: StudyDirectory;
  devTokens: DevTokenRepository;
}

const MAX_BATCH = 100;
const pageKey = (p: Page) => JSON.stringify([p.limit, p.offset, p.cursor ?? null]);

/** One memoized call per distinct argument list (no batching: each is its own query). */
function memo<A extends unknown[], R>(fn: (...args: A) => Promise<R>, key: (...args: A) => string) {
  const loader = new DataLoader<A, R, string>((calls) => Promise.all(calls.map((args) => fn(...args))), {
    batch: false,
    cacheKeyFn: (args) => key(...args),
  });
  return (...args: A) => loader.load(args);
}

export function requestLoaders<D extends Reads>(deps: D): D {
  const { files, studies, devTokens } = deps;
  const fileById = new DataLoader<string, FileRecord | null>((ids) => files.getFiles(ids), {
    maxBatchSize: MAX_BATCH,
  });
  const versionByKey = new DataLoader<{ fileId: string; versionId: string }, VersionRecord | null, string>(
    (keys) => files.getVersions(keys),
    { maxBatchSize: MAX_BATCH, cacheKeyFn: (k) => `${k.fileId}/${k.versionId}` },
  );
  // The files of one page ask for their states in the same tick: one batch of reads for all of them.
  const summaryOf = new DataLoader<string, FileSummary>(async (ids) => files.summaries(ids), {
    maxBatchSize: MAX_BATCH,
  });
  const cachedFiles: FileRepository = Object.assign(Object.create(files) as FileRepository, {
    getFile: (id: string) => fileById.load(id),
    getFiles: (ids: readonly string[]) => fileById.loadMany(ids) as Promise<(FileRecord | null)[]>,
    getVersion: (fileId: string, versionId: string) => versionByKey.load({ fileId, versionId }),
    getFileWithLatest: memo(
      (id: string) => files.getFileWithLatest(id),
      (id) => id,
    ),
    summaries: (ids: readonly string[]) => summaryOf.loadMany(ids) as Promise<FileSummary[]>,
    listFiles: memo(
      (studyId: string, page: Page): Promise<Listing<FileRecord>> => files.listFiles(studyId, page),
      (studyId, page) => `${studyId}|${pageKey(page)}`,
    ),
    listVersions: memo(
      (fileId: string, page: Page): Promise<Listing<VersionRecord>> => files.listVersions(fileId, page),
      (fileId, page) => `${fileId}|${pageKey(page)}`,
    ),
  });
  const cachedStudies: StudyDirectory = {
    exists: memo(
      (id: string) => studies.exists(id),
      (id) => id,
    ),
  };
  const cachedTokens: DevTokenRepository = Object.assign(Object.create(devTokens) as DevTokenRepository, {
    list: memo(
      (page: Page): Promise<Listing<DevTokenRecord>> => devTokens.list(page),
      (page) => pageKey(page),
    ),
  });
  return { ...deps, files: cachedFiles, studies: cachedStudies, devTokens: cachedTokens };
}
