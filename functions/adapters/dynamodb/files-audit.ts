import { type AuditRecord, auditRecord } from '#functions/files/model.js';
import type { AuditLog, Listing } from '#functions/files/ports.js';
import { ValidationError } from '#functions/shared/errors.js';
import type { Page } from '#functions/shared/list.js';
import {
  type Counter,
  CounterDeltas,
  decode,
  type LabelledItem,
  type Partitions,
  pageInMemory,
  pageOf,
  readCount,
  shardOf,
  transact,
} from './common.js';
import { type Documents, QueryCommand } from './documents.js';
import { AUDIT_LIST_SHARDS, FC, FK } from './files-table.js';

/** The stored form of an audit record (key layout in files-table.ts). */
export function auditItem(record: AuditRecord): Record<string, unknown> {
  const sk = FK.listSk(record.at, record.id);
  return {
    pk: FK.auditPk(record.study_id),
    sk,
    gsi1pk: FK.auditShard(shardOf(record.id, AUDIT_LIST_SHARDS)),
    gsi1sk: sk,
    gsi2pk: FK.auditOfFile(record.file_id),
    gsi2sk: sk,
    ...(record.actor ? { gsi3pk: FK.auditOfUser(record.actor), gsi3sk: sk } : {}),
    ...(record.actor && record.file_id
      ? { gsi4pk: FK.auditOfFileUser(record.file_id, record.actor), gsi4sk: sk }
      : {}),
    ...record,
  };
}

/** The lists a record is in, each with its counter. */
function auditCounts(record: AuditRecord): CounterDeltas {
  const d = new CounterDeltas().add(FC.audit, 1);
  if (record.study_id) d.add(FC.auditOfStudy(record.study_id), 1);
  if (record.file_id) d.add(FC.auditOfFile(record.file_id), 1);
  if (record.actor) d.add(FC.auditOfUser(record.actor), 1);
  if (record.actor && record.file_id) d.add(FC.auditOfFileUser(record.file_id, record.actor), 1);
  return d;
}

/** The Put of a record and the counts it moves, for any transaction that writes one with a change. */
export function auditWrites(table: string, record: AuditRecord): LabelledItem[] {
  return [
    {
      kind: 'audit',
      id: record.id,
      item: {
        Put: { TableName: table, Item: auditItem(record), ConditionExpression: 'attribute_not_exists(pk)' },
      },
    },
    ...auditCounts(record).items(table),
  ];
}

/**
 * The download audit trail. Records are never updated or deleted. Every filter is served by keys: study (the
 * partition), file (gsi2), user (gsi3), file and user (gsi4), none (the 4 shards of gsi1, merged newest first); each
 * with its counter. A file's records all carry its study, so study and file together are the file's list or
 * nothing; study and user together (without file) are a 400, since no key holds both (docs/architecture.md).
 */
export class DynamoAuditLog implements AuditLog {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
  ) {}

  async record(entry: AuditRecord): Promise<void> {
    const out = await transact(this.doc, auditWrites(this.table, entry));
    if (!out.ok) throw new Error('Could not record an audit entry');
  }

  async query(
    filter: { studyId?: string; fileId?: string; actor?: string },
    page: Page,
  ): Promise<Listing<AuditRecord>> {
    const table = this.table;
    let counter: Counter;
    let src: Partitions;
    if (filter.fileId) {
      if (filter.studyId && !(await this.fileInStudy(filter.fileId, filter.studyId)))
        return { count: 0, items: pageInMemory([], page) };
      [counter, src] = filter.actor
        ? [
            FC.auditOfFileUser(filter.fileId, filter.actor),
            { table, index: 'gsi4', keys: [FK.auditOfFileUser(filter.fileId, filter.actor)] },
          ]
        : [FC.auditOfFile(filter.fileId), { table, index: 'gsi2', keys: [FK.auditOfFile(filter.fileId)] }];
    } else if (filter.studyId && filter.actor) {
      throw new ValidationError('Invalid query: study and user cannot be combined without file', {
        user: ['cannot be combined with study unless file narrows the list'],
      });
    } else if (filter.studyId) {
      [counter, src] = [FC.auditOfStudy(filter.studyId), { table, keys: [FK.auditPk(filter.studyId)] }];
    } else if (filter.actor) {
      [counter, src] = [
        FC.auditOfUser(filter.actor),
        { table, index: 'gsi3', keys: [FK.auditOfUser(filter.actor)] },
      ];
    } else {
      [counter, src] = [FC.audit, { table, index: 'gsi1', keys: FK.auditShards() }];
    }
    const [count, items] = await Promise.all([
      readCount(this.doc, table, counter),
      pageOf(this.doc, src, page),
    ]);
    return { count, items: items.map((i) => decode(auditRecord, i)) };
  }

  /** Whether a file's records belong to the study: one record of the file says (all carry the file's study). */
  private async fileInStudy(fileId: string, studyId: string): Promise<boolean> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'gsi2',
        KeyConditionExpression: 'gsi2pk = :pk',
        ExpressionAttributeValues: { ':pk': FK.auditOfFile(fileId) },
        Limit: 1,
      }),
    );
    return out.Items?.[0]?.study_id === studyId;
  }
}
