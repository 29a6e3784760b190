import { describe, expect, it } from 'vitest';
import { isLatchChange, LATCH_EXTRAS, latchTxItem } from '#functions/adapters/dynamodb/releases/latch.js';
import type { ReleaseTable } from '#functions/adapters/dynamodb/releases/table.js';
import { WAIT_KIND, WAIT_SEQ, WAIT_TOKEN, WAKE_PENDING } from '#functions/orchestration/wake-latch.js';

const t = { table: 'coordinator' } as ReleaseTable;

describe('the wake latch item', () => {
  it('holds exactly the attributes the wake latch uses', () => {
    expect([...LATCH_EXTRAS].sort()).toEqual([WAIT_TOKEN, WAIT_KIND, WAKE_PENDING, WAIT_SEQ].sort());
  });

  it('tells a latch write from any other, and refuses one that mixes them', () => {
    expect(isLatchChange(['waitToken', 'waitSeq'])).toBe(true);
    expect(isLatchChange(['generation'])).toBe(false);
    expect(isLatchChange([])).toBe(false);
    expect(() => isLatchChange(['wakePending', 'generation'])).toThrow(/not both/);
  });

  it('writes the latch part of a release change as an unconditional update of RE#<id> / RE#L', () => {
    expect(latchTxItem(t, 'RE_1', {}, [])).toBeNull();
    expect(latchTxItem(t, 'RE_1', { wakePending: false }, ['waitToken'])).toEqual({
      kind: 'latch',
      id: 'RE_1',
      item: {
        Update: {
          TableName: 'coordinator',
          Key: { pk: 'RE#RE_1', sk: 'RE#L' },
          UpdateExpression: 'SET #l0 = :l0 REMOVE #m0',
          ExpressionAttributeNames: { '#l0': 'wakePending', '#m0': 'waitToken' },
          ExpressionAttributeValues: { ':l0': false },
        },
      },
    });
  });
});
