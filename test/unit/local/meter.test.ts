import { describe, expect, it } from 'vitest';
import { itemSize, readUnits, s3Class, type TableSchema, writeTargets, writeUnits } from '#local/meter.js';

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
  it('sizes an item by its attribute names and values', () => {
    expect(itemSize({ pk: { S: 'RE#1' }, n: { N: '12345' }, ok: { BOOL: true } })).toBe(
      2 + 4 + 1 + 4 + 2 + 1,
    );
    expect(itemSize(undefined)).toBe(0);
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

describe('the meter classes S3 requests as S3 prices them', () => {
  it('puts uploads, copies and listings in the first class and reads in the second', () => {
    const c = (method: string, url: string, headers: Record<string, string> = {}) =>
      s3Class({ method, url, headers }).tier;
    expect(c('PUT', '/bucket/key')).toBe('tier1');
    expect(c('PUT', '/bucket/key', { 'x-amz-copy-source': '/bucket/other' })).toBe('tier1');
    expect(c('POST', '/bucket/key?uploads')).toBe('tier1');
    expect(c('GET', '/bucket?list-type=2')).toBe('tier1');
    expect(c('GET', '/bucket/key')).toBe('tier2');
    expect(c('HEAD', '/bucket/key')).toBe('tier2');
    expect(c('DELETE', '/bucket/key')).toBe('free');
  });
});
