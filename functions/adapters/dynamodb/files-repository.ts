import {
  BatchWriteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  type AuditRecord,
  type FileRecord,
  fileRecord,
  type VersionRecord,
  versionRecord,
} from '../../files/model.js';
import type { AddVersionOutcome, CreateFileOutcome, FileRepository, Listing } from '../../files/ports.js';
import type { Page } from '../../shared/list.js';
import { decode, type LabelledItem, pagedQuery, putNew, queryAll, transact } from './common.js';
import { auditPut } from './files-audit.js';
import { FK } from './files-table.js';

/** Files and their versions. A file and its versions share one partition of the files table. */
export class DynamoFileRepository implements FileRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  private fileItem(file: FileRecord) {
    return {
      ...FK.file(file.id),
      gsi1pk: FK.filesOfStudy(file.study_id),
      gsi1sk: FK.listSk(file.created_at, file.id),
      gsi2pk: file.id,
      gsi2sk: 'FILE',
      ...file,
    };
  }

  private versionItem(version: VersionRecord) {
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

  async createFile(file: FileRecord, version: VersionRecord, audit: AuditRecord): Promise<CreateFileOutcome> {
    const out = await transact(this.doc, [
      putNew(this.table, 'file', file.id, this.fileItem(file)),
      ...this.versionPuts(version),
      auditPut(this.table, audit),
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
          ConditionCheck: {
            TableName: this.table,
            Key: FK.file(version.file_id),
            // A file being deleted takes no new versions, so none can slip in behind the deletion.
            ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(deleting)',
          },
        },
      },
      ...this.versionPuts(version),
      auditPut(this.table, audit),
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

  async listFiles(studyId: string, page: Page): Promise<Listing<FileRecord>> {
    const { count, items } = await pagedQuery(
      this.doc,
      {
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk',
        ExpressionAttributeValues: { ':pk': FK.filesOfStudy(studyId) },
      },
      page,
    );
    return { count, items: items.map((i) => decode(fileRecord, i)) };
  }

  async listVersions(fileId: string, page: Page): Promise<Listing<VersionRecord>> {
    const { count, items } = await pagedQuery(
      this.doc,
      {
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk',
        ExpressionAttributeValues: { ':pk': FK.versionsOfFile(fileId) },
      },
      page,
    );
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
      ...(audit ? [auditPut(this.table, audit)] : []),
    ]);
    if (out.ok) return true;
    if (out.conditionFailed.length) return false;
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
    const out = await transact(this.doc, [
      {
        kind: 'version',
        id: version.id,
        item: { Delete: { TableName: this.table, Key: FK.version(version.file_id, version.id) } },
      },
      auditPut(this.table, audit),
    ]);
    if (!out.ok) throw new Error('Deleting a version kept conflicting with concurrent writers');
  }

  async deleteFile(file: FileRecord, versions: VersionRecord[], audit: AuditRecord): Promise<void> {
    // Versions go first, in batches, so that the final transaction (file + audit) stays small whatever the count.
    const keys = versions.map((v) => FK.version(v.file_id, v.id));
    for (let i = 0; i < keys.length; i += 25) {
      let requests: Record<string, unknown>[] = keys
        .slice(i, i + 25)
        .map((Key) => ({ DeleteRequest: { Key } }));
      for (let attempt = 0; requests.length && attempt < 8; attempt++) {
        const out = await this.doc.send(new BatchWriteCommand({ RequestItems: { [this.table]: requests } }));
        requests = (out.UnprocessedItems?.[this.table] ?? []) as Record<string, unknown>[];
        if (requests.length) await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
      }
      if (requests.length) throw new Error('DynamoDB left version deletions unprocessed');
    }
    const out = await transact(this.doc, [
      { kind: 'file', id: file.id, item: { Delete: { TableName: this.table, Key: FK.file(file.id) } } },
      auditPut(this.table, audit),
    ]);
    if (!out.ok) throw new Error('Deleting a file kept conflicting with concurrent writers');
  }
}
