import {
  type AuditRecord,
  FileId,
  type FileRecord,
  fileRecord,
  type VersionRecord,
  versionRecord,
} from '../../files/model.js';
import type { AddVersionOutcome, CreateFileOutcome, FileRepository, Listing } from '../../files/ports.js';
import type { Page } from '../../shared/list.js';
import * as z from '../../shared/zod.js';
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
import { BatchGetCommand, type Documents, GetCommand, UpdateCommand } from './documents.js';
import { auditWrites } from './files-audit.js';
import { FC, FK, TOTALS_SHARDS } from './files-table.js';

const idClaim = z.object({ file_id: FileId });
const totalsShard = z.object({ versions: z._default(z.number(), 0), bytes: z._default(z.number(), 0) });

/** Version deletions per transaction: DynamoDB's 100 items, less one for the totals and one for the file's count. */
const VERSIONS_PER_TRANSACTION = 98;
/** Re-reads after a version changed under a deletion (an upload confirmed meanwhile) before giving up. */
const DELETE_ROUNDS = 5;

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

  /** The stored file; `versionCount` counts its versions (GET /files/<id>/versions) and moves with each of them. */
  fileItem(file: FileRecord, versionCount = 1) {
    return {
      ...FK.file(file.id),
      versionCount,
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

  /** Deletes a version only if it is still in the state it was read in, so the totals move with what is deleted. */
  private versionDelete(version: VersionRecord): LabelledItem {
    return {
      kind: 'version',
      id: version.id,
      item: {
        Delete: {
          TableName: this.table,
          Key: FK.version(version.file_id, version.id),
          ConditionExpression: '#state = :state',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':state': version.state },
        },
      },
    };
  }

  /** Adds to (or, with sign -1, takes off) the totals the available ones among `versions`; nothing if none is. */
  private totalsChange(versions: VersionRecord[], sign: 1 | -1): LabelledItem[] {
    const available = versions.filter((v) => v.state === 'available');
    if (available.length === 0) return [];
    const bytes = available.reduce((sum, v) => sum + v.size, 0);
    return [
      {
        kind: 'totals',
        id: 'available',
        item: {
          Update: {
            TableName: this.table,
            Key: FK.totalsShard(Math.floor(Math.random() * TOTALS_SHARDS)),
            UpdateExpression: 'ADD versions :n, #bytes :b',
            ExpressionAttributeNames: { '#bytes': 'bytes' },
            ExpressionAttributeValues: { ':n': sign * available.length, ':b': sign * bytes },
          },
        },
      },
    ];
  }

  /** A file's versions move its count: one Update of the file item in the same transaction. */
  private versionCountChange(fileId: string, delta: number): LabelledItem {
    return {
      kind: 'file_count',
      id: fileId,
      item: {
        Update: {
          TableName: this.table,
          Key: FK.file(fileId),
          UpdateExpression: 'ADD versionCount :d',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':d': delta },
        },
      },
    };
  }

  async createFile(file: FileRecord, version: VersionRecord, audit: AuditRecord): Promise<CreateFileOutcome> {
    const out = await transact(this.doc, [
      putNew(this.table, 'file', file.id, this.fileItem(file)),
      ...this.versionPuts(version),
      ...new CounterDeltas().add(FC.filesOfStudy(file.study_id), 1).items(this.table),
      ...auditWrites(this.table, audit),
    ]);
    if (out.ok) return 'created';
    if (out.conditionFailed.length) return 'id_collision';
    throw new Error('Creating a file kept conflicting with concurrent writers');
  }

  async addVersion(version: VersionRecord, audit: AuditRecord): Promise<AddVersionOutcome> {
    const out = await transact(this.doc, [
      {
        kind: 'file',
        id: version.file_id,
        item: {
          Update: {
            TableName: this.table,
            Key: FK.file(version.file_id),
            UpdateExpression: 'ADD versionCount :one',
            // A file being deleted takes no new versions, so none can slip in behind the deletion.
            ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(deleting)',
            ExpressionAttributeValues: { ':one': 1 },
          },
        },
      },
      ...this.versionPuts(version),
      ...auditWrites(this.table, audit),
    ]);
    if (out.ok) return 'created';
    if (out.conditionFailed.some((c) => c.kind === 'file')) return 'file_missing';
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

  async getFileWithVersions(fileId: string): Promise<{ file: FileRecord; versions: VersionRecord[] } | null> {
    const items = await queryAll(this.doc, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': FK.filePk(fileId) },
      ConsistentRead: true,
    });
    const fileItem = items.find((i) => i.sk === 'FILE');
    if (!fileItem) return null;
    const versions = items
      .filter((i) => typeof i.sk === 'string' && i.sk.startsWith('VERSION#'))
      .map((i) => decode(versionRecord, i));
    return { file: decode(fileRecord, fileItem), versions };
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

  async finishUpload(
    version: VersionRecord,
    outcome: {
      state: 'available' | 'failed' | 'verifying';
      confirmedAt: string;
      from?: 'pending' | 'verifying';
    },
    audit: AuditRecord | null,
  ): Promise<boolean> {
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
              ':from': outcome.from ?? 'pending',
            },
          },
        },
      },
      // Only the move into `available` counts: from pending (single PUT) or from verifying (the worker).
      ...(outcome.state === 'available' ? this.totalsChange([{ ...version, state: 'available' }], 1) : []),
      ...(audit ? auditWrites(this.table, audit) : []),
    ]);
    if (out.ok) return true;
    if (out.conditionFailed.some((c) => c.kind === 'version')) return false;
    throw new Error('Confirming an upload kept conflicting with concurrent writers');
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
        this.versionDelete(current),
        ...this.totalsChange([current], -1),
        this.versionCountChange(current.file_id, -1),
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

  async deleteFile(file: FileRecord, versions: VersionRecord[], audit: AuditRecord): Promise<void> {
    // Versions go first, in transactions that also update the totals, so that the final transaction (file + audit)
    // stays small whatever the count. A version whose state changed since it was read fails its transaction's
    // condition; the file's versions are then read again and the rest deleted as they are now.
    let remaining = versions;
    for (let round = 0; remaining.length; round++) {
      if (round === DELETE_ROUNDS)
        throw new Error('Versions kept changing while their file was being deleted');
      let changed = false;
      for (let i = 0; i < remaining.length; i += VERSIONS_PER_TRANSACTION) {
        const chunk = remaining.slice(i, i + VERSIONS_PER_TRANSACTION);
        const out = await transact(this.doc, [
          ...chunk.map((v) => this.versionDelete(v)),
          ...this.totalsChange(chunk, -1),
          this.versionCountChange(file.id, -chunk.length),
        ]);
        if (out.ok) continue;
        if (!out.conditionFailed.some((c) => c.kind === 'version'))
          throw new Error("Deleting a file's versions kept conflicting with concurrent writers");
        changed = true;
      }
      if (!changed) break;
      remaining = (await this.getFileWithVersions(file.id))?.versions ?? [];
    }
    const out = await transact(this.doc, [
      {
        kind: 'file',
        id: file.id,
        item: {
          Delete: {
            TableName: this.table,
            Key: FK.file(file.id),
            ConditionExpression: 'attribute_exists(pk)',
          },
        },
      },
      ...new CounterDeltas().add(FC.filesOfStudy(file.study_id), -1).items(this.table),
      ...auditWrites(this.table, audit),
    ]);
    // A concurrent deletion got there first (and took the count back): nothing left to do.
    if (!out.ok && out.conditionFailed.some((c) => c.kind === 'file')) return;
    if (!out.ok) throw new Error('Deleting a file kept conflicting with concurrent writers');
  }
}
