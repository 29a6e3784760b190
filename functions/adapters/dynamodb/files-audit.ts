import { type AuditRecord, auditRecord } from '../../files/model.js';
import type { AuditLog, Listing } from '../../files/ports.js';
import type { Page } from '../../shared/list.js';
import { decode, Filter, type LabelledItem, pagedQuery } from './common.js';
import { type Documents, PutCommand } from './documents.js';
import { FK } from './files-table.js';

/** The stored form of an audit record, for repositories that write one in the same transaction as a change. */
export function auditItem(record: AuditRecord): Record<string, unknown> {
  const sk = FK.listSk(record.at, record.id);
  return {
    pk: FK.auditPk(record.study_id),
    sk,
    gsi1pk: FK.auditAll(),
    gsi1sk: sk,
    gsi2pk: FK.auditOfFile(record.file_id),
    gsi2sk: sk,
    ...record,
  };
}

export function auditPut(table: string, record: AuditRecord): LabelledItem {
  return {
    kind: 'audit',
    id: record.id,
    item: {
      Put: { TableName: table, Item: auditItem(record), ConditionExpression: 'attribute_not_exists(pk)' },
    },
  };
}

/**
 * The download audit trail. Records are never updated; the three access paths are by study (the partition), by
 * file (gsi2) and everything newest first (gsi1). A user filter applies on top of any of them.
 */
export class DynamoAuditLog implements AuditLog {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
  ) {}

  async record(entry: AuditRecord): Promise<void> {
    await this.doc.send(new PutCommand({ TableName: this.table, Item: auditItem(entry) }));
  }

  async query(
    filter: { studyId?: string; fileId?: string; actor?: string },
    page: Page,
  ): Promise<Listing<AuditRecord>> {
    const f = new Filter().eq('actor', filter.actor);
    let input: Parameters<typeof pagedQuery>[1];
    if (filter.fileId) {
      f.eq('study_id', filter.studyId);
      input = {
        TableName: this.table,
        IndexName: 'gsi2',
        KeyConditionExpression: 'gsi2pk = :pk',
        ExpressionAttributeValues: { ':pk': FK.auditOfFile(filter.fileId) },
      };
    } else if (filter.studyId) {
      input = {
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': FK.auditPk(filter.studyId) },
      };
    } else {
      input = {
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk',
        ExpressionAttributeValues: { ':pk': FK.auditAll() },
      };
    }
    const { count, items } = await pagedQuery(this.doc, f.apply(input), page);
    return { count, items: items.map((i) => decode(auditRecord, i)) };
  }
}
