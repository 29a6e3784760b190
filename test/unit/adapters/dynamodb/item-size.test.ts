import { NumberValueImpl } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import {
  assertFits,
  assertItemFits,
  itemBytes,
  numberBytes,
  valueBytes,
} from '#functions/adapters/dynamodb/item-size.js';
import { ValidationError } from '#functions/shared/errors.js';

/**
 * DynamoDB's item-size rules, "DynamoDB item sizes and formats" (Amazon DynamoDB Developer Guide): the examples
 * below apply each documented rule to a value whose size it fixes.
 */
describe('a number takes 1 byte per two significant digits, plus 1', () => {
  it.each([
    ['7', 2], // one digit
    ['12', 2], // two digits: one byte
    ['123', 3],
    ['12345', 4],
    ['-12345', 4], // the sign is no digit
    ['123.45', 4], // nor the decimal point
    ['1000000', 2], // trailing zeros are trimmed
    ['0.0001', 2], // and leading ones
    ['00120.0', 2],
    ['1.5e+300', 2], // the exponent is no digit either
    ['0', 1],
    ['9'.repeat(38), 20], // DynamoDB's most: 38 significant digits
  ])('%s takes %i bytes', (text, bytes) => {
    expect(numberBytes(text)).toBe(bytes);
  });

  it('sizes JavaScript numbers, bigints and wrapped numbers by the same digits', () => {
    expect(valueBytes(12345)).toBe(4);
    expect(valueBytes(0.5)).toBe(2);
    expect(valueBytes(12345678901234567890n)).toBe(11);
    expect(valueBytes(NumberValueImpl.from('123456789012345678901234567890'))).toBe(16);
  });
});

describe('an item is its attribute names plus its values', () => {
  it('counts strings in UTF-8 bytes, binaries in raw bytes, booleans and null as 1 byte', () => {
    expect(itemBytes({ name: 'abc' })).toBe(4 + 3);
    expect(itemBytes({ é: 'ü' })).toBe(2 + 2);
    expect(itemBytes({ b: new Uint8Array(10) })).toBe(1 + 10);
    expect(itemBytes({ t: true, n: null })).toBe(1 + 1 + 1 + 1);
  });

  it('gives a list or map 3 bytes plus 1 per element, and a map entry its name', () => {
    expect(itemBytes({ l: [] })).toBe(1 + 3);
    expect(itemBytes({ l: ['ab', 'c'] })).toBe(1 + 3 + (1 + 2) + (1 + 1));
    expect(itemBytes({ m: {} })).toBe(1 + 3);
    expect(itemBytes({ m: { ab: 'xyz' } })).toBe(1 + 3 + 1 + (2 + 3));
  });

  it('sizes a set by its elements', () => {
    expect(itemBytes({ ss: new Set(['ab', 'cde']) })).toBe(2 + 2 + 3);
    expect(itemBytes({ ns: new Set([1, 22, 333]) })).toBe(2 + 2 + 2 + 3);
  });

  it('leaves out undefined values, which the document client removes', () => {
    expect(itemBytes({ a: 'x', gone: undefined })).toBe(1 + 1);
    expect(itemBytes({ l: ['x', undefined] })).toBe(1 + 3 + (1 + 1));
  });
});

describe('the guard before every write', () => {
  it('refuses an item over the budget with a 400 naming its largest attribute', () => {
    const item = { pk: 'RE#1', notes: 'x'.repeat(1000), title: 'y'.repeat(10) };
    expect(() => assertFits(item, 2000)).not.toThrow();
    const err = (() => {
      try {
        assertFits(item, 500, 'release');
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).message).toBe(
      `Invalid notes: is too large: the release would take ${itemBytes(item)} bytes, and at most 500 are stored`,
    );
  });

  it('sizes an update by the values it writes, named after the attributes they land in', () => {
    const update = {
      Update: {
        ExpressionAttributeNames: { '#body': 'body' },
        ExpressionAttributeValues: { ':body': 'z'.repeat(410 * 1024), ':now': 1 },
      },
    };
    expect(() => assertItemFits({ item: update })).toThrow(/^Invalid body: is too large/);
    expect(() =>
      assertItemFits({ item: { Put: { Item: { pk: 'a', big: 'z'.repeat(300 * 1024) } } } }),
    ).not.toThrow();
  });
});
