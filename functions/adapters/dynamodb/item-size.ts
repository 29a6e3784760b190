import { NumberValueImpl } from '@aws-sdk/util-dynamodb';
import { ValidationError } from '#functions/shared/errors.js';

/**
 * DynamoDB refuses an item over 400 KB, and a refused write of a release item would leave the release stuck (not
 * even an abort could record its failure). So every write is sized before it is sent: an item that would not fit
 * is a 400 naming the largest field, and nothing is written.
 *
 * The size follows DynamoDB's documented rules ("DynamoDB item sizes and formats", Amazon DynamoDB Developer Guide,
 * <https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html>): an attribute
 * takes its name's UTF-8 bytes plus its value's size; a string its UTF-8 bytes, a binary its raw bytes, a number
 * 1 byte per two significant digits plus 1, a boolean or null 1 byte, a list or map 3 bytes plus 1 byte per element
 * plus its elements (a map's entries count their names), a set the sum of its elements. The local stack's cost meter
 * (local/meter/) sizes items with the same functions, so what it bills and what the store refuses agree.
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

/**
 * Size of a number from its decimal text: DynamoDB keeps up to 38 significant digits, trims leading and trailing
 * zeros, and takes about 1 byte per two significant digits plus 1. The sign, the decimal point and the exponent
 * take no digit.
 */
export function numberBytes(text: string): number {
  const mantissa = text.trim().replace(/^[+-]/, '').replace(/e.*$/i, '').replace('.', '');
  const significant = mantissa.replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(significant.length / 2) + 1;
}

/**
 * Size of one value in the document client's native form (what `@aws-sdk/lib-dynamodb` marshalls): strings,
 * numbers, bigints and wrapped numbers (NumberValue), Uint8Arrays, booleans, null, arrays (lists), Sets and plain
 * objects (maps). `undefined` takes nothing: the document client removes it (removeUndefinedValues).
 */
export function valueBytes(v: unknown): number {
  if (v === undefined) return 0;
  if (v === null || typeof v === 'boolean') return 1;
  if (typeof v === 'string') return Buffer.byteLength(v);
  if (typeof v === 'number' || typeof v === 'bigint') return numberBytes(String(v));
  if (v instanceof NumberValueImpl) return numberBytes(v.toString());
  if (v instanceof Uint8Array) return v.byteLength;
  if (v instanceof Set) {
    let n = 0;
    for (const x of v) n += valueBytes(x);
    return n;
  }
  if (Array.isArray(v)) {
    let n = 3;
    for (const x of v) if (x !== undefined) n += 1 + valueBytes(x);
    return n;
  }
  if (typeof v === 'object') {
    let n = 3;
    for (const x of Object.values(v)) if (x !== undefined) n += 1;
    return n + itemBytes(v as Record<string, unknown>);
  }
  return Buffer.byteLength(String(v));
}

/** Stored size of an item (or of the attributes an update writes): each attribute's name plus its value. */
export function itemBytes(item: Record<string, unknown>): number {
  let n = 0;
  for (const [k, v] of Object.entries(item)) if (v !== undefined) n += Buffer.byteLength(k) + valueBytes(v);
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
 * The guard every transaction passes through (transact.ts `transact`): a Put is sized whole; an Update by what it
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
