import { type Study, studySchema } from '#functions/coordinator/model.js';
import type { MirroredStudy, Paged, StudyRepository } from '#functions/coordinator/ports.js';
import type { StudyDirectory } from '#functions/files/ports.js';
import type { Page } from '#functions/shared/list.js';
import { C, CounterDeltas, decode, K, pageOf, queryAll, readCount, type Tables, transact } from './common.js';
import { BatchGetCommand, type Documents, GetCommand, UpdateCommand } from './documents.js';

/** The stored study (key layout in common.ts): what the sync writes, with the last publication, as one item. */
export function studyItem(s: Study): Record<string, unknown> {
  return { ...K.study(s.id), gsi1pk: 'SD', gsi1sk: K.listSk(s.createdAt, s.id), ...s };
}

/**
 * Studies mirrored from the dataservice (studies table, pk SD#<id>). Read by the coordinator and the file service;
 * written only by the study sync (mirrored fields) and by publishing (last_pub_version / last_pub_date, through
 * the release repository's applyChange). Studies are never deleted, only flagged, so "exists" never flips back.
 */
export class DynamoStudyRepository implements StudyRepository {
  constructor(
    private readonly doc: Documents,
    private readonly tables: Pick<Tables, 'studies'>,
  ) {}

  private get table() {
    return this.tables.studies;
  }

  async get(id: string): Promise<Study | null> {
    const out = await this.doc.send(new GetCommand({ TableName: this.table, Key: K.study(id) }));
    return out.Item ? decode(studySchema, out.Item) : null;
  }

  async missing(ids: string[]): Promise<string[]> {
    const unique = [...new Set(ids)];
    const found = new Set<string>();
    for (let i = 0; i < unique.length; i += 100) {
      let keys: Record<string, unknown>[] | undefined = unique.slice(i, i + 100).map((id) => K.study(id));
      while (keys?.length) {
        const out = await this.doc.send(
          new BatchGetCommand({
            RequestItems: { [this.table]: { Keys: keys, ProjectionExpression: 'id' } },
          }),
        );
        for (const item of out.Responses?.[this.table] ?? []) found.add(String(item.id));
        keys = out.UnprocessedKeys?.[this.table]?.Keys as Record<string, unknown>[] | undefined;
      }
    }
    return unique.filter((id) => !found.has(id));
  }

  async list(page: Page): Promise<Paged<Study>> {
    const [count, items] = await Promise.all([
      readCount(this.doc, this.table, C.studies),
      pageOf(this.doc, { table: this.table, index: 'gsi1', keys: ['SD'] }, page),
    ]);
    return { count, items: items.map((i) => decode(studySchema, i)) };
  }

  async allIds(): Promise<{ id: string; deleted: boolean }[]> {
    const items = await queryAll(this.doc, {
      TableName: this.table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': 'SD' },
      ProjectionExpression: 'id, deleted',
    });
    return items.map((i) => ({ id: String(i.id), deleted: i.deleted === true }));
  }

  /**
   * An update, not a put: last_pub_version / last_pub_date belong to publishing and must survive the sync. A study
   * seen for the first time is written in one transaction with the study count (conditioned on its absence).
   */
  async upsertMirrored(s: MirroredStudy): Promise<void> {
    const update = this.mirroredUpdate(s);
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await this.doc.send(new UpdateCommand({ ...update, ConditionExpression: 'attribute_exists(pk)' }));
        return;
      } catch (err) {
        if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
      }
      const out = await transact(this.doc, [
        {
          kind: 'study',
          id: s.id,
          item: { Update: { ...update, ConditionExpression: 'attribute_not_exists(pk)' } },
        },
        ...new CounterDeltas().add(C.studies, 1).items(this.table),
      ]);
      if (out.ok) return;
      // Created concurrently: update it as an existing study.
    }
    throw new Error(`study ${s.id} could not be mirrored`);
  }

  private mirroredUpdate(s: MirroredStudy) {
    return {
      TableName: this.table,
      Key: K.study(s.id),
      UpdateExpression:
        'SET id = :id, #name = :name, version = :version, visible = :visible, createdAt = :createdAt, ' +
        'deleted = :false, gsi1pk = :g, gsi1sk = :gsk, ' +
        'lastPubVersion = if_not_exists(lastPubVersion, :null), lastPubDate = if_not_exists(lastPubDate, :null)',
      ExpressionAttributeNames: { '#name': 'name' },
      ExpressionAttributeValues: {
        ':id': s.id,
        ':name': s.name,
        ':version': s.version,
        ':visible': s.visible,
        ':createdAt': s.createdAt,
        ':false': false,
        ':g': 'SD',
        ':gsk': K.listSk(s.createdAt, s.id),
        ':null': null,
      },
    };
  }

  async markDeleted(id: string): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: K.study(id),
        UpdateExpression: 'SET deleted = :true',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':true': true },
      }),
    );
  }
}

/** The file service's StudyDirectory port over the mirrored studies table: a deleted-flagged study does not exist. */
export function studyDirectory(studies: Pick<StudyRepository, 'get'>): StudyDirectory {
  return {
    async exists(studyId) {
      const study = await studies.get(studyId);
      return study !== null && !study.deleted;
    },
  };
}
