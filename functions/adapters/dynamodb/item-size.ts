import { ValidationError } from '#functions/shared/errors.js';

/**
 * DynamoDB refuses an item over 400 KB, and a refused write of a release item would leave the release stuck (not
 * even an abort could record its failure). So every write is sized before it is sent: an item that would not fit
 * is a 400 naming the largest field, and nothing is written. The estimate follows DynamoDB's rules (attribute
 * names and string values in UTF-8 bytes, numbers up to 21 bytes, 3 bytes of overhead per list or map and 1 per
 * element) and errs on the large side.
 */
export const MAX_ITEM_BYTES = 400 * 1024;

/**
 * Room kept free on a release item for the orchestration's own attributes (wait token, execution name, failure
 * reason: a few KB at most), so that the records the API stores can never crowd out a state change or an abort.
 */
export const RELEASE_EXTRAS_RESERVE = 32 * 1024;
export const RELEASE_RECORD_BUDGET = MAX_ITEM_BYTES - RELEASE_EXTRAS_RESERVE;
/** Largest single orchestration attribute on a release item (a Step Functions task token is at most 1 KB). */
export const MAX_EXTRA_BYTES = 8 * 1024;

export function valueBytes(v: unknown): number {
  if (v === null || v === undefined || typeof v === 'boolean') return 1;
  if (typeof v === 'string') return Buffer.byteLength(v);
  if (typeof v === 'number' || typeof v === 'bigint') return 21;
  if (v instanceof Uint8Array) return v.byteLength;
  if (Array.isArray(v) || v instanceof Set) {
    let n = 3;
    for (const x of v) n += 1 + valueBytes(x);
    return n;
  }
  if (typeof v === 'object') return 3 + itemBytes(v as Record<string, unknown>);
  return Buffer.byteLength(String(v));
}

/** Estimated stored size of an item (or of the attributes an update writes). */
export function itemBytes(item: Record<string, unknown>): number {
  let n = 0;
  for (const [k, v] of Object.entries(item)) n += Buffer.byteLength(k) + 1 + valueBytes(v);
  return n;
}

/** The attribute that takes the most room: the field a 400 names. */
function largest(item: Record<string, unknown>): string {
  let name = 'body';
  let size = -1;
  for (const [k, v] of Object.entries(item)) {
    const n = valueBytes(v);
    if (n > size) [name, size] = [k, n];
  }
  return name;
}

/** Throws a 400 naming the largest attribute when `item` would take more than `budget` bytes. */
export function assertFits(item: Record<string, unknown>, budget = MAX_ITEM_BYTES, what = 'item'): void {
  const size = itemBytes(item);
  if (size <= budget) return;
  const field = largest(item);
  const message = `is too large: the ${what} would take ${size} bytes, and at most ${budget} are stored`;
  throw new ValidationError(`Invalid ${field}: ${message}`, { [field]: [message] });
}

interface TxItem {
  Put?: { Item?: Record<string, unknown> };
  Update?: {
    ExpressionAttributeValues?: Record<string, unknown>;
    ExpressionAttributeNames?: Record<string, string>;
  };
}

/**
 * The guard every transaction passes through (common.ts `transact`): a Put is sized whole; an Update by what it
 * writes, with the placeholders mapped back to attribute names so the 400 names a field.
 */
export function assertItemFits(labelled: { item: unknown }): void {
  const item = labelled.item as TxItem;
  if (item.Put?.Item) assertFits(item.Put.Item);
  else if (item.Update?.ExpressionAttributeValues) {
    const names = item.Update.ExpressionAttributeNames ?? {};
    const values: Record<string, unknown> = {};
    for (const [placeholder, v] of Object.entries(item.Update.ExpressionAttributeValues)) {
      const name = names[placeholder.replace(/^:/, '#')] ?? placeholder.replace(/^:/, '');
      values[name] = v;
    }
    assertFits(values);
  }
}
