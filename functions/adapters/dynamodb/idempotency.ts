import type { IdempotencyRecord, IdempotencyStore, StoredResponse } from '#functions/shared/idempotency.js';
import * as z from '#functions/shared/zod.js';
import { DeleteCommand, type Documents, GetCommand, PutCommand, UpdateCommand } from './documents.js';

const conditionFailed = (err: unknown) => (err as Error)?.name === 'ConditionalCheckFailedException';

/**
 * Idempotency keys as items of an existing table (the coordinator's, or the file service's), so no function needs a
 * table, grant or env variable of its own:
 *
 *   idempotency key   IDEM#<sha256 of identity, method, path, key>  / IDEM
 *                     state in_progress | completed, fingerprint (sha256 of the body), claim (the holding claim's
 *                     id: completing and releasing are conditioned on it), until (ms: an in-progress claim is
 *                     abandoned after it), expiresAt (ms), response (JSON text), ttl (epoch s)
 *
 * DynamoDB's TTL purges expired items eventually (within days), so liveness is decided by `expiresAt` and `until` in
 * the claim's condition, never by whether the item is still there.
 */
const key = (k: string) => ({ pk: `IDEM#${k}`, sk: 'IDEM' });

const storedResponse = z.object({
  status: z.number(),
  body: z.optional(z.unknown()),
  headers: z.optional(z.record(z.string(), z.string())),
});
const item = z.object({
  state: z.enum(['in_progress', 'completed']),
  fingerprint: z.string(),
  response: z.optional(z.string()),
});

export class DynamoIdempotencyStore implements IdempotencyStore {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
  ) {}

  async claim(
    k: string,
    c: {
      fingerprint: string;
      claimId: string;
      nowMs: number;
      expiresAtMs: number;
      inProgressUntilMs: number;
    },
  ): Promise<IdempotencyRecord | 'claimed' | 'vanished'> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: {
            ...key(k),
            state: 'in_progress',
            fingerprint: c.fingerprint,
            claim: c.claimId,
            until: c.inProgressUntilMs,
            expiresAt: c.expiresAtMs,
            ttl: Math.ceil(c.expiresAtMs / 1000),
          },
          // Free, expired, or held by a request that cannot still be running (its function timed out).
          ConditionExpression:
            'attribute_not_exists(pk) OR expiresAt < :now OR (#state = :inProgress AND #until < :now)',
          ExpressionAttributeNames: { '#state': 'state', '#until': 'until' },
          ExpressionAttributeValues: { ':now': c.nowMs, ':inProgress': 'in_progress' },
        }),
      );
      return 'claimed';
    } catch (err) {
      if (!conditionFailed(err)) throw err;
    }
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: key(k), ConsistentRead: true }),
    );
    // Released between the two reads (its request failed): the caller claims again.
    if (!out.Item) return 'vanished';
    const held = z.parse(item, out.Item);
    if (held.state === 'in_progress' || held.response === undefined)
      return { state: 'in_progress', fingerprint: held.fingerprint };
    return {
      state: 'completed',
      fingerprint: held.fingerprint,
      response: z.parse(storedResponse, JSON.parse(held.response)) as StoredResponse,
    };
  }

  async complete(k: string, claimId: string, response: StoredResponse, expiresAtMs: number): Promise<void> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: key(k),
          // Stored as JSON text: a response body is whatever the route returned (empty strings, nested nulls),
          // and it comes back byte for byte.
          UpdateExpression: 'SET #state = :completed, #response = :response, expiresAt = :exp, #ttl = :ttl',
          // Only the claim that ran this request: a take-over by a retry with the same body has its own claim id.
          ConditionExpression: '#state = :inProgress AND #claim = :claim',
          ExpressionAttributeNames: {
            '#state': 'state',
            '#response': 'response',
            '#ttl': 'ttl',
            '#claim': 'claim',
          },
          ExpressionAttributeValues: {
            ':completed': 'completed',
            ':inProgress': 'in_progress',
            ':response': JSON.stringify(response),
            ':exp': expiresAtMs,
            ':ttl': Math.ceil(expiresAtMs / 1000),
            ':claim': claimId,
          },
        }),
      );
    } catch (err) {
      // The claim was taken over after this request outlived it: the newer holder's answer stands.
      if (!conditionFailed(err)) throw err;
    }
  }

  async release(k: string, claimId: string): Promise<void> {
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.table,
          Key: key(k),
          ConditionExpression: '#state = :inProgress AND #claim = :claim',
          ExpressionAttributeNames: { '#state': 'state', '#claim': 'claim' },
          ExpressionAttributeValues: { ':inProgress': 'in_progress', ':claim': claimId },
        }),
      );
    } catch (err) {
      if (!conditionFailed(err)) throw err;
    }
  }
}
