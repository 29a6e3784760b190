import {
  type AuditRecord,
  type DevTokenRecord,
  devTokenRecord,
  type SignedTokenRecord,
  signedTokenRecord,
} from '#functions/files/model.js';
import type { DevTokenRepository, Listing, SignedTokenRepository } from '#functions/files/ports.js';
import type { Page } from '#functions/shared/list.js';
import { CounterDeltas, decode, pageOf, putNew, readCount, transact } from './common.js';
import { type Documents, GetCommand, UpdateCommand } from './documents.js';
import { auditWrites } from './files-audit.js';
import { FC, FK } from './files-table.js';

const conditionFailed = (err: unknown) => (err as Error)?.name === 'ConditionalCheckFailedException';

/**
 * Single-use signed-URL tokens. The item is keyed by the SHA-256 of the secret; the secret itself is never stored.
 * DynamoDB's TTL purges expired items eventually (within days), so validity is decided by `expires_at_ms` in the
 * claim's condition, never by whether the item is still there.
 */
export class DynamoSignedTokenRepository implements SignedTokenRepository {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
  ) {}

  async create(hash: string, token: SignedTokenRecord, audit: AuditRecord): Promise<void> {
    const out = await transact(this.doc, [
      putNew(this.table, 'token', hash, {
        ...FK.signed(hash),
        ...token,
        ttl: Math.ceil(token.expires_at_ms / 1000),
      }),
      ...auditWrites(this.table, audit),
    ]);
    if (!out.ok) throw new Error('Could not store a signed-URL token');
  }

  async claim(
    hash: string,
    target: { studyId: string; fileId: string; versionId: string },
    nowMs: number,
    claimId: string,
  ): Promise<SignedTokenRecord | null> {
    // The whole check is this one conditional write: of any number of concurrent claims exactly one matches
    // `claimed = false`, and a token minted for another version, file or study never matches at all.
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: FK.signed(hash),
          UpdateExpression: 'SET claimed = :t, claim_id = :cid, claimed_at_ms = :now',
          ConditionExpression:
            'attribute_exists(pk) AND claimed = :f AND expires_at_ms > :now AND ' +
            'study_id = :s AND file_id = :fi AND version_id = :v',
          ExpressionAttributeValues: {
            ':t': true,
            ':f': false,
            ':cid': claimId,
            ':now': nowMs,
            ':s': target.studyId,
            ':fi': target.fileId,
            ':v': target.versionId,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return out.Attributes ? decode(signedTokenRecord, out.Attributes) : null;
    } catch (err) {
      if (conditionFailed(err)) return null;
      throw err;
    }
  }

  async peek(
    hash: string,
    target: { studyId: string; fileId: string; versionId: string },
    nowMs: number,
  ): Promise<SignedTokenRecord | null> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: FK.signed(hash), ConsistentRead: true }),
    );
    if (!out.Item) return null;
    const token = decode(signedTokenRecord, out.Item);
    // The claim's condition, read instead of written.
    const usable =
      !token.claimed &&
      token.expires_at_ms > nowMs &&
      token.study_id === target.studyId &&
      token.file_id === target.fileId &&
      token.version_id === target.versionId;
    return usable ? token : null;
  }

  async release(hash: string, claimId: string): Promise<void> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: FK.signed(hash),
          UpdateExpression: 'SET claimed = :f REMOVE claim_id, claimed_at_ms',
          ConditionExpression: 'claim_id = :cid',
          ExpressionAttributeValues: { ':f': false, ':cid': claimId },
        }),
      );
    } catch (err) {
      if (!conditionFailed(err)) throw err;
    }
  }
}

/**
 * Developer tokens: one item per name (which keeps names unique and lists them) and one per secret hash (which
 * finds a presented secret with one consistent read). Both are written and deleted together.
 */
export class DynamoDevTokenRepository implements DevTokenRepository {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
  ) {}

  async create(hash: string, token: DevTokenRecord, audit: AuditRecord): Promise<boolean> {
    const out = await transact(this.doc, [
      putNew(this.table, 'name', token.name, {
        ...FK.devToken(token.name),
        gsi1pk: FK.devTokens(),
        gsi1sk: FK.listSk(token.created_at, token.name),
        ...token,
        hash,
      }),
      putNew(this.table, 'hash', token.name, { ...FK.devHash(hash), ...token }),
      ...new CounterDeltas().add(FC.devTokens, 1).items(this.table),
      ...auditWrites(this.table, audit),
    ]);
    if (out.ok) return true;
    if (out.conditionFailed.some((c) => c.kind === 'name')) return false;
    throw new Error('Could not store a developer token');
  }

  async findByHash(hash: string): Promise<DevTokenRecord | null> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: FK.devHash(hash), ConsistentRead: true }),
    );
    return out.Item ? decode(devTokenRecord, out.Item) : null;
  }

  async list(page: Page): Promise<Listing<DevTokenRecord>> {
    const [count, items] = await Promise.all([
      readCount(this.doc, this.table, FC.devTokens),
      pageOf(this.doc, { table: this.table, index: 'gsi1', keys: [FK.devTokens()] }, page),
    ]);
    return { count, items: items.map((i) => decode(devTokenRecord, i)) };
  }

  async delete(name: string, audit: (token: DevTokenRecord) => AuditRecord): Promise<boolean> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: FK.devToken(name), ConsistentRead: true }),
    );
    if (!out.Item) return false;
    const token = decode(devTokenRecord, out.Item);
    const hash = out.Item.hash;
    if (typeof hash !== 'string') throw new Error(`Developer token ${name} has no hash`);
    const result = await transact(this.doc, [
      {
        kind: 'name',
        id: name,
        item: {
          Delete: {
            TableName: this.table,
            Key: FK.devToken(name),
            ConditionExpression: 'attribute_exists(pk)',
          },
        },
      },
      { kind: 'hash', id: name, item: { Delete: { TableName: this.table, Key: FK.devHash(hash) } } },
      ...new CounterDeltas().add(FC.devTokens, -1).items(this.table),
      ...auditWrites(this.table, audit(token)),
    ]);
    if (result.ok) return true;
    if (result.conditionFailed.length) return false;
    throw new Error('Deleting a developer token kept conflicting with concurrent writers');
  }
}
