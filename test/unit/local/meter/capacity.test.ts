import { describe, expect, it } from 'vitest';
import { itemSize, readUnits, type TableSchema, writeTargets, writeUnits } from '#local/meter/capacity.js';

/** The coordinator table as DynamoDB Local describes it: pk/sk, two indexes projecting everything. */
const coordinator: TableSchema = {
  keys: ['pk', 'sk'],
  indexes: [
    { keys: ['gsi1pk', 'gsi1sk'], projection: 'ALL', include: [] },
    { keys: ['gsi2pk', 'gsi2sk'], projection: 'ALL', include: [] },
  ],
};

/** Strings of `n` bytes. */
const s = (n: number) => ({ S: 'x'.repeat(n) });

describe('the meter counts DynamoDB capacity as DynamoDB bills it', () => {
  it('sizes an item by its attribute names and values, as the store sizes it', () => {
    expect(itemSize({ pk: { S: 'RE#1' }, n: { N: '12345' }, ok: { BOOL: true } })).toBe(
      2 + 4 + 1 + 4 + 2 + 1,
    );
    expect(itemSize(undefined)).toBe(0);
    // Trailing zeros take no room: 1,000,000 is one significant digit.
    expect(itemSize({ n: { N: '1000000' } })).toBe(1 + 2);
    // A map: 3 bytes, 1 per entry, then each entry's name and value; a number set: its numbers.
    expect(itemSize({ m: { M: { a: { S: 'xy' }, b: { NULL: true } } } })).toBe(1 + 3 + 2 + (1 + 2) + (1 + 1));
    expect(itemSize({ ns: { NS: ['1', '22', '333'] } })).toBe(2 + 2 + 2 + 3);
  });

  it('sizes binary values by their bytes, whether the JSON protocol (base64) or the SDK (bytes) carries them', () => {
    const bytes = Buffer.from('0123456789');
    expect(itemSize({ b: { B: bytes.toString('base64') } })).toBe(1 + 10);
    expect(itemSize({ b: { B: new Uint8Array(bytes) } })).toBe(1 + 10);
    expect(itemSize({ l: { L: [{ B: bytes.toString('base64') }] } })).toBe(1 + 3 + 1 + 10);
    expect(itemSize({ bs: { BS: [bytes.toString('base64'), 'AAA='] } })).toBe(2 + 10 + 2);
  });

  it('writes a new coordinator item in 1 KB steps, once per index that holds it', () => {
    const target = {
      table: 'local-Coordinator',
      key: { pk: { S: 'a' }, sk: { S: 'b' } },
      kind: 'put' as const,
    };
    const small = { pk: { S: 'a' }, sk: { S: 'b' }, gsi1pk: { S: 'RE' }, gsi1sk: { S: 'x' } };
    expect(writeUnits(target, undefined, small, coordinator)).toBe(1 + 1);
    const big = { ...small, gsi2pk: { S: 'ACTIVE#RE' }, gsi2sk: { S: 'x' }, blob: s(2500) };
    expect(writeUnits(target, undefined, big, coordinator)).toBe(3 + 3 + 3);
    const keysOnly: TableSchema = {
      keys: ['pk', 'sk'],
      indexes: coordinator.indexes.map((i) => ({ ...i, projection: 'KEYS_ONLY' as const })),
    };
    expect(writeUnits(target, undefined, big, keysOnly)).toBe(3 + 1 + 1);
  });

  it('counts an index entry that an update removes, and two when it changes an index key', () => {
    const target = {
      table: 'local-Coordinator',
      key: { pk: { S: 'a' }, sk: { S: 'b' } },
      kind: 'update' as const,
    };
    const active = { pk: { S: 'a' }, sk: { S: 'b' }, gsi2pk: { S: 'ACTIVE#RE' }, gsi2sk: { S: '1' } };
    const done = { pk: { S: 'a' }, sk: { S: 'b' }, state: { S: 'published' } };
    expect(writeUnits(target, active, done, coordinator)).toBe(1 + 1);
    const moved = { ...active, gsi2sk: { S: '2' } };
    expect(writeUnits(target, active, moved, coordinator)).toBe(1 + 2);
    expect(
      writeUnits(target, active, Object.fromEntries(Object.entries(active).reverse()), coordinator),
    ).toBe(1);
  });

  it('doubles the table write of a transaction, not its index writes, which follow the commit', () => {
    const target = { table: 't', key: {}, kind: 'update' as const };
    const active = { pk: { S: 'a' }, sk: { S: 'b' }, gsi2pk: { S: 'ACTIVE#RE' }, gsi2sk: { S: '1' } };
    const moved = { ...active, gsi2sk: { S: '2' } };
    expect(writeUnits(target, active, moved, coordinator, true)).toBe(2 + 2);
    expect(writeUnits({ ...target, kind: 'check' }, active, active, coordinator, true)).toBe(2);
    expect(writeUnits({ ...target, kind: 'put' }, undefined, active, coordinator, true)).toBe(2 + 1);
  });

  it('finds every item a transaction writes, condition checks included', () => {
    const tables = { 'local-Coordinator': coordinator, 'local-Studies': { keys: ['pk', 'sk'], indexes: [] } };
    const targets = writeTargets(
      'TransactWriteItems',
      {
        TransactItems: [
          { Put: { TableName: 'local-Coordinator', Item: { pk: { S: 'EV#1' }, sk: { S: 'EV' }, m: s(10) } } },
          { Update: { TableName: 'local-Coordinator', Key: { pk: { S: 'RE#1' }, sk: { S: 'RE' } } } },
          { ConditionCheck: { TableName: 'local-Studies', Key: { pk: { S: 'SD#1' }, sk: { S: 'SD' } } } },
        ],
      },
      tables,
    );
    expect(targets.map((t) => [t.kind, t.key.pk.S])).toEqual([
      ['put', 'EV#1'],
      ['update', 'RE#1'],
      ['check', 'SD#1'],
    ]);
    expect(targets[0].key).toEqual({ pk: { S: 'EV#1' }, sk: { S: 'EV' } });
  });

  it('reads in 4 KB steps of what came back, half for eventually consistent reads, at least one step', () => {
    const item = { pk: s(5000) };
    expect(readUnits('GetItem', { ConsistentRead: true }, { Item: item })).toBe(2);
    expect(readUnits('GetItem', {}, { Item: item })).toBe(1);
    expect(readUnits('Query', { ConsistentRead: true }, { Items: [] })).toBe(1);
    expect(readUnits('Query', { IndexName: 'gsi1', ConsistentRead: true }, { Items: [item, item] })).toBe(
      1.5,
    );
    expect(readUnits('TransactGetItems', {}, { Responses: [{ Item: item }] })).toBe(4);
    expect(readUnits('Query', { ProjectionExpression: 'id' }, { Items: [] })).toBeUndefined();
  });
});
