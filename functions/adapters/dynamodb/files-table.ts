import { listSortKey } from '#functions/shared/list.js';

/**
 * Key layout of the `files` table (pk / sk; gsi1 lists one kind newest first; gsi2 finds an item by its own id, and
 * for audit records, by file). Only the files-* repositories use it.
 *
 *   file           FILE#<file>        / FILE            gsi1 STUDY#<study>#FILES / <created>#<file>   gsi2 <file> / FILE
 *   version        FILE#<file>        / VERSION#<ver>   gsi1 FILE#<file>#VERSIONS / <created>#<ver>   gsi2 <ver> / VERSION
 *   available      FILE#<file>        / AVAIL#<created>#<ver>   a copy of an available version (they never change),
 *                                                       put in the transaction that makes it available, deleted with it
 *   id claim       ID#<version>       / ID              (version ids stay unique although versions live under their file)
 *   signed token   SIGNED#<sha256>    / TOKEN           ttl = expiry (epoch seconds)
 *   dev token      DEVTOKEN#<name>    / TOKEN           gsi1 DEVTOKENS / <created>#<name>      (the name is unique)
 *   dev hash       DEVHASH#<sha256>   / TOKEN           (looks a presented secret up)
 *   audit          AUDIT#<study|->    / <at>#<id>       gsi1 AUDIT#<nn> (4 shards by id)   gsi2 AUDIT#FILE#<file|->
 *                                                       gsi3 AUDIT#USER#<actor>   gsi4 AUDIT#FILE#<file>#USER#<actor>
 *   counter        CNT#<name>#<nn>    / CNT             n: the exact count of a list (common.ts, Counter), FC below
 *   totals shard   TOTALS#AVAILABLE   / SHARD#<nn>      versions, bytes: ADDed in the transaction that makes a version
 *                                                       available or deletes it (DRS objectCount without a scan)
 *
 * A file item carries `versionCount` (moved with every version put or delete), the count of GET /files/<id>/versions,
 * `pendingVersions` (moved as a version is added, leaves `pending` or is deleted: the per-file cap of pending
 * uploads is a condition on it) and, until one of its versions is confirmed, `unconfirmed` (such a file counts in
 * its study's `FILES#PENDING#SD#<study>` counter, on which the per-study cap of pending files is a condition).
 *
 * A file and its versions share one partition. "The file and its latest available version" is one Query of at most
 * two items, by key: `sk <= FILE` read backwards gives the file item, then the newest `AVAIL#` item (`AVAIL#` sorts
 * before `FILE`, `VERSION#` after it), whatever the number of versions. The totals are
 * spread over TOTALS_SHARDS items so that concurrent confirmations rarely touch the same item (a transaction that
 * meets another one on an item is cancelled and retried); reading them is one Query of that many small items.
 */
export const TOTALS_SHARDS = 16;
/** Shards of the all-records audit list (gsi1 AUDIT#<nn>): docs/architecture.md has the arithmetic. */
export const AUDIT_LIST_SHARDS = 4;

/** The file service's counters (same item layout as the coordinator's, common.ts). */
export const FC = {
  filesOfStudy: (studyId: string) => ({ name: `FILES#SD#${studyId}`, shards: 1 }),
  devTokens: { name: 'DEVTOKENS', shards: 1 },
  audit: { name: 'AUDIT', shards: 8 },
  auditOfStudy: (studyId: string) => ({ name: `AUDIT#SD#${studyId}`, shards: 4 }),
  auditOfFile: (fileId: string) => ({ name: `AUDIT#FILE#${fileId}`, shards: 2 }),
  auditOfUser: (actor: string) => ({ name: `AUDIT#USER#${actor}`, shards: 2 }),
  auditOfFileUser: (fileId: string, actor: string) => ({ name: `AUDIT#FU#${fileId}#${actor}`, shards: 1 }),
  /** Files of a study none of whose versions was confirmed yet: one shard, since its cap is a condition on it. */
  pendingFilesOfStudy: (studyId: string) => ({ name: `FILES#PENDING#SD#${studyId}`, shards: 1 }),
};

export const FK = {
  file: (id: string) => ({ pk: `FILE#${id}`, sk: 'FILE' }),
  filePk: (id: string) => `FILE#${id}`,
  filesOfStudy: (studyId: string) => `STUDY#${studyId}#FILES`,
  version: (fileId: string, id: string) => ({ pk: `FILE#${fileId}`, sk: `VERSION#${id}` }),
  versionsOfFile: (fileId: string) => `FILE#${fileId}#VERSIONS`,
  available: (fileId: string, createdAt: string, id: string) => ({
    pk: `FILE#${fileId}`,
    sk: `AVAIL#${listSortKey(createdAt, id)}`,
  }),
  idClaim: (id: string) => ({ pk: `ID#${id}`, sk: 'ID' }),
  signed: (hash: string) => ({ pk: `SIGNED#${hash}`, sk: 'TOKEN' }),
  devToken: (name: string) => ({ pk: `DEVTOKEN#${name}`, sk: 'TOKEN' }),
  devTokens: () => 'DEVTOKENS',
  devHash: (hash: string) => ({ pk: `DEVHASH#${hash}`, sk: 'TOKEN' }),
  auditPk: (studyId: string | null) => `AUDIT#${studyId ?? '-'}`,
  auditShard: (n: number) => `AUDIT#${String(n).padStart(2, '0')}`,
  auditShards: () => Array.from({ length: AUDIT_LIST_SHARDS }, (_, n) => FK.auditShard(n)),
  auditOfUser: (actor: string) => `AUDIT#USER#${actor}`,
  auditOfFileUser: (fileId: string, actor: string) => `AUDIT#FILE#${fileId}#USER#${actor}`,
  auditOfFile: (fileId: string | null) => `AUDIT#FILE#${fileId ?? '-'}`,
  listSk: listSortKey,
  totalsPk: () => 'TOTALS#AVAILABLE',
  totalsShard: (n: number) => ({ pk: 'TOTALS#AVAILABLE', sk: `SHARD#${String(n).padStart(2, '0')}` }),
};
