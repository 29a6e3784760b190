import {
  type AuditRecord,
  FileId,
  type FileRecord,
  type FileSummary,
  fileRecord,
  type VersionRecord,
  versionRecord,
} from '#functions/files/model.js';
import type {
  AddVersionOutcome,
  CreateFileOutcome,
  FileRepository,
  Listing,
} from '#functions/files/ports.js';
import type { Page } from '#functions/shared/list.js';
import * as z from '#functions/shared/zod.js';
import {
  CounterDeltas,
  decode,
  type LabelledItem,
  pageOf,
  putNew,
  queryAll,
  readCount,
  transact,
} from './common.js';
import { BatchGetCommand, type Documents, GetCommand, QueryCommand, UpdateCommand } from './documents.js';
import { auditWrites } from './files-audit.js';
import {
  availableDeletes,
  leavesPending,
  pendingFilesChange,
  totalsChange,
  versionCountChange,
  versionDelete,
} from './files-items.js';
import { fileSummaries, hasFileNamed } from './files-reads.js';
import { FC, FK } from './files-table.js';

const idClaim = z.object({ file_id: FileId });
const totalsShard = z.object({ versions: z._default(z.number(), 0), bytes: z._default(z.number(), 0) });

/**
 * Version deletions per transaction: DynamoDB's 100 items, less one for the totals and one for the file's count,
 * shared by versions that take up to two items each (the version and, when available, its key item).
 */
const VERSIONS_PER_TRANSACTION = 49;
/** Re-reads after a version changed under a deletion (an upload confirmed meanwhile) before giving up. */
const DELETE_ROUNDS = 5;
/** A new file: its one version is pending, and nothing of it has been confirmed. */
const NEW_FILE = { versions: 1, unconfirmed: true };
const fileFlags = z.object({
  study_id: z.string(),
  unconfirmed: z.optional(z.boolean()),
  deleting: z.optional(z.boolean()),
  pendingVersions: z.optional(z.number()),
});

/**
 * Files and their versions. A file and its versions share one partition of the files table. The totals of available
 * versions (count and bytes) change only inside the transactions that make a version available or delete one, and
 * every version deletion is conditioned on the state it was read in, so the totals never drift.
 */
export class DynamoFileRepository implements FileRepository {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
  ) {}

  /**
   * The stored file; `versionCount` counts its versions (GET /files/<id>/versions) and moves with each of them;
   * `pendingVersions` counts those still pending, and `unconfirmed` marks a file none of whose versions has been
   * confirmed yet (files-table.ts).
   */
  fileItem(
    file: FileRecord,
    versionCount = 1,
    pending: { versions: number; unconfirmed: boolean } = NEW_FILE,
  ) {
    return {
      ...FK.file(file.id),
      versionCount,
      pendingVersions: pending.versions,
      ...(pending.unconfirmed ? { unconfirmed: true } : {}),
      gsi1pk: FK.filesOfStudy(file.study_id),
      gsi1sk: FK.listSk(file.created_at, file.id),
      gsi2pk: file.id,
      gsi2sk: 'FILE',
      ...file,
    };
  }

  versionItem(version: VersionRecord) {
    return {
      ...FK.version(version.file_id, version.id),
      gsi1pk: FK.versionsOfFile(version.file_id),
      gsi1sk: FK.listSk(version.created_at, version.id),
      gsi2pk: version.id,
      gsi2sk: 'VERSION',
      ...version,
    };
  }

  /** The new version and the claim that keeps its id unique across files. */
  private versionPuts(version: VersionRecord): LabelledItem[] {
    return [
      putNew(this.table, 'version', version.id, this.versionItem(version)),
      putNew(this.table, 'id', version.id, {
        ...FK.idClaim(version.id),
        kind: 'version',
        file_id: version.file_id,
      }),
    ];
  }

  /** The key item of an available version: a copy, so that the latest is read with its file in one Query. */
  availableItem(version: VersionRecord) {
    return { ...FK.available(version.file_id, version.created_at, version.id), ...version };
  }

  async createFile(
    file: FileRecord,
    version: VersionRecord,
    audit: AuditRecord,
    limits: { maxPendingFiles: number },
  ): Promise<CreateFileOutcome> {
    const out = await transact(this.doc, [
      putNew(this.table, 'file', file.id, this.fileItem(file)),
      ...this.versionPuts(version),
      ...new CounterDeltas().add(FC.filesOfStudy(file.study_id), 1).items(this.table),
      pendingFilesChange(this.table, file.study_id, 1, limits.maxPendingFiles),
      ...auditWrites(this.table, audit),
    ]);
    if (out.ok) return 'created';
    if (out.conditionFailed.some((c) => c.kind === 'pending_files')) return 'too_many_pending';
    if (out.conditionFailed.length) return 'id_collision';
    throw new Error('Creating a file kept conflicting with concurrent writers');
  }

  async addVersion(
    version: VersionRecord,
    audit: AuditRecord,
    limits: { maxPendingVersions: number },
  ): Promise<AddVersionOutcome> {
    const out = await transact(this.doc, [
      {
        kind: 'file',
        id: version.file_id,
        item: {
          Update: {
            TableName: this.table,
            Key: FK.file(version.file_id),
            UpdateExpression: 'ADD versionCount :one, pendingVersions :one',
            // A file being deleted takes no new versions, so none can slip in behind the deletion; and a file
            // takes at most the cap of pending uploads.
            ConditionExpression:
              'attribute_exists(pk) AND attribute_not_exists(deleting) AND ' +
              '(attribute_not_exists(pendingVersions) OR pendingVersions < :cap)',
            ExpressionAttributeValues: { ':one': 1, ':cap': limits.maxPendingVersions },
          },
        },
      },
      ...this.versionPuts(version),
      ...auditWrites(this.table, audit),
    ]);
    if (out.ok) return 'created';
    if (out.conditionFailed.some((c) => c.kind === 'file')) {
      const flags = await this.fileFlags(version.file_id);
      return flags && !flags.deleting && (flags.pendingVersions ?? 0) >= limits.maxPendingVersions
        ? 'too_many_pending'
        : 'file_missing';
    }
    if (out.conditionFailed.length) return 'id_collision';
    throw new Error('Adding a version kept conflicting with concurrent writers');
  }

  async getFile(fileId: string): Promise<FileRecord | null> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: FK.file(fileId), ConsistentRead: true }),
    );
    return out.Item ? decode(fileRecord, out.Item) : null;
  }

  async getFiles(fileIds: readonly string[]): Promise<(FileRecord | null)[]> {
    const items = await this.batchGet(fileIds.map((id) => FK.file(id)));
    return items.map((i) => (i ? decode(fileRecord, i) : null));
  }

  async getVersions(
    keys: readonly { fileId: string; versionId: string }[],
  ): Promise<(VersionRecord | null)[]> {
    const items = await this.batchGet(keys.map((k) => FK.version(k.fileId, k.versionId)));
    return items.map((i) => (i ? decode(versionRecord, i) : null));
  }

  /**
   * Items by key, strongly consistent, in the order of `keys` (null where none): one BatchGetItem per 100 distinct
   * keys, plus one more for any keys DynamoDB left unprocessed (throttling).
   */
  private async batchGet(keys: { pk: string; sk: string }[]): Promise<(Record<string, unknown> | null)[]> {
    const id = (k: { pk: unknown; sk: unknown }) => `${String(k.pk)}\u0000${String(k.sk)}`;
    const distinct = [...new Map(keys.map((k) => [id(k), k])).values()];
    const found = new Map<string, Record<string, unknown>>();
    for (let i = 0; i < distinct.length; i += 100) {
      let pending: Record<string, unknown>[] | undefined = distinct.slice(i, i + 100);
      while (pending?.length) {
        const out = await this.doc.send(
          new BatchGetCommand({ RequestItems: { [this.table]: { Keys: pending, ConsistentRead: true } } }),
        );
        for (const item of out.Responses?.[this.table] ?? [])
          found.set(id(item as { pk: unknown; sk: unknown }), item as Record<string, unknown>);
        pending = out.UnprocessedKeys?.[this.table]?.Keys as Record<string, unknown>[] | undefined;
      }
    }
    return keys.map((k) => found.get(id(k)) ?? null);
  }

  /**
   * One strongly consistent Query of at most two items: `sk <= FILE` backwards is the file item, then the newest
   * `AVAIL#` key item (files-table.ts). Its cost does not depend on the number of versions.
   */
  async getFileWithLatest(
    fileId: string,
  ): Promise<{ file: FileRecord; latest: VersionRecord | null } | null> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND sk <= :file',
        ExpressionAttributeValues: { ':pk': FK.filePk(fileId), ':file': 'FILE' },
        ScanIndexForward: false,
        Limit: 2,
        ConsistentRead: true,
      }),
    );
    const [fileItem, latest] = out.Items ?? [];
    if (fileItem?.sk !== 'FILE') return null;
    const avail = typeof latest?.sk === 'string' && latest.sk.startsWith('AVAIL#');
    return { file: decode(fileRecord, fileItem), latest: avail ? decode(versionRecord, latest) : null };
  }

  async someVersions(fileId: string, limit: number): Promise<VersionRecord[]> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :v)',
        ExpressionAttributeValues: { ':pk': FK.filePk(fileId), ':v': 'VERSION#' },
        Limit: limit,
        ConsistentRead: true,
      }),
    );
    return (out.Items ?? []).map((i) => decode(versionRecord, i));
  }

  private async fileFlags(fileId: string): Promise<z.infer<typeof fileFlags> | null> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: FK.file(fileId), ConsistentRead: true }),
    );
    return out.Item ? decode(fileFlags, out.Item) : null;
  }

  async getVersion(fileId: string, versionId: string): Promise<VersionRecord | null> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: FK.version(fileId, versionId), ConsistentRead: true }),
    );
    return out.Item ? decode(versionRecord, out.Item) : null;
  }

  async fileIdOfVersion(versionId: string): Promise<string | null> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: FK.idClaim(versionId), ConsistentRead: true }),
    );
    return out.Item ? decode(idClaim, out.Item).file_id : null;
  }

  async availableTotals(): Promise<{ versions: number; bytes: number }> {
    const shards = await queryAll(this.doc, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': FK.totalsPk() },
      ConsistentRead: true,
    });
    let versions = 0;
    let bytes = 0;
    for (const item of shards) {
      const shard = decode(totalsShard, item);
      versions += shard.versions;
      bytes += shard.bytes;
    }
    return { versions, bytes };
  }

  async listFiles(studyId: string, page: Page): Promise<Listing<FileRecord>> {
    const table = this.table;
    const [count, items] = await Promise.all([
      readCount(this.doc, table, FC.filesOfStudy(studyId)),
      pageOf(this.doc, { table, index: 'gsi1', keys: [FK.filesOfStudy(studyId)] }, page),
    ]);
    return { count, items: items.map((i) => decode(fileRecord, i)) };
  }

  summaries(fileIds: readonly string[]): Promise<FileSummary[]> {
    return fileSummaries(this.doc, this.table, fileIds);
  }

  hasFileNamed(studyId: string, name: string, exceptFileId?: string): Promise<boolean> {
    return hasFileNamed(this.doc, this.table, studyId, name, exceptFileId);
  }

  async listVersions(fileId: string, page: Page): Promise<Listing<VersionRecord>> {
    const table = this.table;
    const [file, items] = await Promise.all([
      this.doc.send(
        new GetCommand({
          TableName: table,
          Key: FK.file(fileId),
          ConsistentRead: true,
          ProjectionExpression: 'versionCount',
        }),
      ),
      pageOf(this.doc, { table, index: 'gsi1', keys: [FK.versionsOfFile(fileId)] }, page),
    ]);
    const count = typeof file.Item?.versionCount === 'number' ? file.Item.versionCount : 0;
    return { count, items: items.map((i) => decode(versionRecord, i)) };
  }

  /**
   * The version's move with, in the same transaction: when it leaves `pending`, the file's pending count (and, on
   * the file's first confirmation, its study's count of pending files); when it becomes available, its key item
   * (files-table.ts) and the totals. The file's flag is read first and the file's update is conditioned on it, so a
   * concurrent confirmation of another version of the same file makes this one look again.
   */
  async finishUpload(
    version: VersionRecord,
    outcome: {
      state: 'available' | 'failed' | 'verifying';
      confirmedAt: string;
      from?: 'pending' | 'verifying';
    },
    audit: AuditRecord | null,
  ): Promise<boolean> {
    const from = outcome.from ?? 'pending';
    const moved: VersionRecord = {
      ...version,
      state: outcome.state,
      confirmed_at: outcome.confirmedAt,
      multipart: null,
    };
    for (let attempt = 0; attempt < DELETE_ROUNDS; attempt++) {
      const flags = from === 'pending' ? await this.fileFlags(version.file_id) : null;
      const out = await transact(this.doc, [
        {
          kind: 'version',
          id: version.id,
          item: {
            Update: {
              TableName: this.table,
              Key: FK.version(version.file_id, version.id),
              UpdateExpression: 'SET #state = :state, confirmed_at = :at, multipart = :null',
              ConditionExpression: 'attribute_exists(pk) AND #state = :from',
              ExpressionAttributeNames: { '#state': 'state' },
              ExpressionAttributeValues: {
                ':state': outcome.state,
                ':at': outcome.confirmedAt,
                ':null': null,
                ':from': from,
              },
            },
          },
        },
        ...(flags ? leavesPending(this.table, version.file_id, flags) : []),
        // Only the move into `available` counts: from pending (single PUT) or from verifying (the worker).
        ...(outcome.state === 'available'
          ? [
              {
                kind: 'available',
                id: version.id,
                item: { Put: { TableName: this.table, Item: this.availableItem(moved) } },
              },
              ...totalsChange(this.table, [moved], 1),
            ]
          : []),
        ...(audit ? auditWrites(this.table, audit) : []),
      ]);
      if (out.ok) return true;
      if (out.conditionFailed.some((c) => c.kind === 'version')) return false;
      if (!out.conditionFailed.some((c) => c.kind === 'file_pending'))
        throw new Error('Confirming an upload kept conflicting with concurrent writers');
    }
    throw new Error("A file's pending state kept changing while an upload was confirmed");
  }

  async beginDelete(fileId: string): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: FK.file(fileId),
          UpdateExpression: 'SET deleting = :t',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':t': true },
        }),
      );
      return true;
    } catch (err) {
      if ((err as Error).name === 'ConditionalCheckFailedException') return false;
      throw err;
    }
  }

  async deleteVersion(version: VersionRecord, audit: AuditRecord): Promise<void> {
    let current: VersionRecord | null = version;
    for (let round = 0; current && round < DELETE_ROUNDS; round++) {
      const out = await transact(this.doc, [
        versionDelete(this.table, current),
        ...availableDeletes(this.table, [current]),
        ...totalsChange(this.table, [current], -1),
        versionCountChange(this.table, current.file_id, [current]),
        ...auditWrites(this.table, audit),
      ]);
      if (out.ok) return;
      if (!out.conditionFailed.some((c) => c.kind === 'version'))
        throw new Error('Deleting a version kept conflicting with concurrent writers');
      // Its state changed since it was read (an upload was confirmed meanwhile), or it is gone: look again.
      current = await this.getVersion(version.file_id, version.id);
    }
    if (current) throw new Error('A version kept changing while it was being deleted');
  }

  /**
   * Deletes these versions of a file (with their key items, the totals and the file's counts), in transactions of
   * VERSIONS_PER_TRANSACTION; false when one of them changed since it was read (the caller reads again).
   */
  async deleteVersions(fileId: string, versions: VersionRecord[]): Promise<boolean> {
    let unchanged = true;
    for (let i = 0; i < versions.length; i += VERSIONS_PER_TRANSACTION) {
      const chunk = versions.slice(i, i + VERSIONS_PER_TRANSACTION);
      const out = await transact(this.doc, [
        ...chunk.map((v) => versionDelete(this.table, v)),
        ...availableDeletes(this.table, chunk),
        ...totalsChange(this.table, chunk, -1),
        versionCountChange(this.table, fileId, chunk),
      ]);
      if (out.ok) continue;
      if (!out.conditionFailed.some((c) => c.kind === 'version'))
        throw new Error("Deleting a file's versions kept conflicting with concurrent writers");
      unchanged = false;
    }
    return unchanged;
  }

  /** The file item (its versions are gone: deleteVersions), its study's counts and the audit record. */
  async deleteFile(file: FileRecord, audit: AuditRecord): Promise<void> {
    for (let round = 0; round < DELETE_ROUNDS; round++) {
      const flags = await this.fileFlags(file.id);
      // A concurrent deletion got there first (and took the counts back): nothing left to do.
      if (!flags) return;
      const out = await transact(this.doc, [
        {
          kind: 'file',
          id: file.id,
          item: {
            Delete: {
              TableName: this.table,
              Key: FK.file(file.id),
              ConditionExpression: flags.unconfirmed
                ? 'attribute_exists(pk) AND attribute_exists(unconfirmed)'
                : 'attribute_exists(pk) AND attribute_not_exists(unconfirmed)',
            },
          },
        },
        ...new CounterDeltas().add(FC.filesOfStudy(file.study_id), -1).items(this.table),
        ...(flags.unconfirmed ? [pendingFilesChange(this.table, file.study_id, -1)] : []),
        ...auditWrites(this.table, audit),
      ]);
      if (out.ok) return;
      if (!out.conditionFailed.some((c) => c.kind === 'file'))
        throw new Error('Deleting a file kept conflicting with concurrent writers');
    }
    throw new Error('A file kept changing while it was being deleted');
  }
}
