import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { ConflictError } from '#functions/shared/errors.js';
import { type Documents, TransactWriteCommand, type TransactWriteCommandInput } from './documents.js';
import { assertItemFits } from './item-size.js';

/** One TransactWriteItems and its retries, for every repository (re-exported by common.ts). */

/** Transaction items labelled with what they are, so a cancellation can say which condition failed. */
export interface LabelledItem {
  kind: string;
  id: string;
  item: NonNullable<TransactWriteCommandInput['TransactItems']>[number];
}

/** A labelled transaction Put of a new item: it fails (and is reported by label) if the key is already taken. */
export function putNew(table: string, kind: string, id: string, Item: Record<string, unknown>): LabelledItem {
  return {
    kind,
    id,
    item: { Put: { TableName: table, Item, ConditionExpression: 'attribute_not_exists(pk)' } },
  };
}

/** An item whose condition failed: its label and, when it asked for them (ALL_OLD), its attributes as they are. */
export interface FailedCondition {
  kind: string;
  id: string;
  item?: Record<string, unknown>;
}

export type TransactOutcome =
  | { ok: true }
  | { ok: false; conditionFailed: FailedCondition[]; conflict: boolean };

/** Cancellation reasons that pass with time: a concurrent writer, or DynamoDB throttling the table or an index. */
const TRANSIENT_REASONS = new Set([
  'TransactionConflict',
  'ThrottlingError',
  'ProvisionedThroughputExceeded',
]);

/**
 * Runs one TransactWriteItems. Condition failures come back as data (which items failed) so callers can map them to
 * the right error or retry with fresh ids. A cancellation for a transient reason (a transaction conflict with a
 * concurrent writer, throttling) is retried here with jittered backoff, since conditions are re-evaluated on every
 * attempt. Throttling that outlasts the attempts is thrown marked `$retryable` (the SDK's own convention), so the
 * orchestration retries the step instead of failing the release.
 */
export async function transact(
  doc: Documents,
  items: LabelledItem[],
  attempts = 8,
): Promise<TransactOutcome> {
  if (items.length > 100) throw new ConflictError(`A change of ${items.length} items exceeds DynamoDB's 100`);
  for (const i of items) assertItemFits(i);
  for (let attempt = 1; ; attempt++) {
    try {
      await doc.send(new TransactWriteCommand({ TransactItems: items.map((i) => i.item) }));
      return { ok: true };
    } catch (err) {
      // By name, as the SDK and the signed adapter both name it: no class identity crosses adapters or bundles.
      if ((err as Error)?.name !== 'TransactionCanceledException') throw err;
      const reasons =
        (err as { CancellationReasons?: { Code?: string; Item?: Record<string, AttributeValue> }[] })
          .CancellationReasons ?? [];
      const conditionFailed = reasons
        .map((r, i): FailedCondition | null =>
          r?.Code === 'ConditionalCheckFailed'
            ? { kind: items[i].kind, id: items[i].id, ...(r.Item ? { item: unmarshall(r.Item) } : {}) }
            : null,
        )
        .filter((x): x is FailedCondition => x !== null);
      const conflict = reasons.some((r) => r?.Code === 'TransactionConflict');
      const transient = reasons.some((r) => TRANSIENT_REASONS.has(r?.Code ?? ''));
      const throttled = transient && !conflict;
      if (conditionFailed.length === 0 && transient && attempt < attempts) {
        await backoff(attempt);
        continue;
      }
      if (conditionFailed.length === 0 && throttled)
        throw Object.assign(err as Error, { $retryable: { throttling: true } });
      if (conditionFailed.length === 0 && !conflict) throw err;
      return { ok: false, conditionFailed, conflict };
    }
  }
}

/** Full jitter: a random pause of up to 10 ms × 2^attempt (at most 640 ms), so retries of many writers spread out. */
export const backoff = (attempt: number) =>
  new Promise((r) => setTimeout(r, Math.random() * 10 * 2 ** Math.min(attempt, 6)));
