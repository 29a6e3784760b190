import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { groupsCompleted } from '#functions/adapters/dynamodb/releases/shard-stream.js';
import { PHASE_ENDS } from '#functions/coordinator/model.js';

/** Stream records as Lambda hands them: marshalled keys and images. */
function record(
  keys: { pk: string; sk: string },
  before: Record<string, unknown> | undefined,
  after: Record<string, unknown> | undefined,
  eventName: DynamoDBRecord['eventName'] = before ? 'MODIFY' : 'INSERT',
): DynamoDBRecord {
  const m = (v: Record<string, unknown> | undefined) =>
    v ? (marshall({ ...keys, ...v }) as never) : undefined;
  return { eventName, dynamodb: { Keys: marshall(keys) as never, OldImage: m(before), NewImage: m(after) } };
}
const shard = (release: string, g = 0) => ({ pk: `RE#${release}`, sk: `RE#V#${g}` });

describe('groupsCompleted', () => {
  it('names the write that took its group count of a phase-ending state to the group size', () => {
    const records = [
      record(shard('RE_1'), { size: 3, 'n:staged': 1 }, { size: 3, 'n:staged': 2 }),
      record(shard('RE_1', 1), { size: 3, 'n:staged': 2 }, { size: 3, 'n:staged': 3 }),
      record(shard('RE_2'), { size: 2, 'n:published': 1 }, { size: 2, 'n:published': 2 }),
    ];
    expect(groupsCompleted(records, PHASE_ENDS)).toEqual([
      { releaseId: 'RE_1', state: 'staged' },
      { releaseId: 'RE_2', state: 'published' },
    ]);
  });

  it('counts the first write of a group of one, which creates the shard', () => {
    expect(
      groupsCompleted([record(shard('RE_1'), undefined, { size: 1, 'n:staged': 1 })], PHASE_ENDS),
    ).toEqual([{ releaseId: 'RE_1', state: 'staged' }]);
  });

  it('ignores a write that leaves a complete group complete (a progress, the release moving)', () => {
    const done = { size: 2, 'n:staged': 2 };
    expect(
      groupsCompleted([record(shard('RE_1'), done, { ...done, phase: 'staged', 'p:TA_1': 100 })], PHASE_ENDS),
    ).toEqual([]);
  });

  it('ignores shards without a size, other items, other states and removals', () => {
    const records = [
      record(shard('RE_1'), { 'n:staged': 1 }, { 'n:staged': 2 }),
      record({ pk: 'RE#RE_1', sk: 'TA#TA_1' }, { size: 1 }, { size: 1, 'n:staged': 1 }),
      record({ pk: 'TS#TS_1', sk: 'RE#V#0' }, { size: 1 }, { size: 1, 'n:staged': 1 }),
      record(shard('RE_1'), { size: 1 }, { size: 1, 'n:running': 1 }),
      record(shard('RE_1'), { size: 1, 'n:staged': 0 }, undefined, 'REMOVE'),
    ];
    expect(groupsCompleted(records, PHASE_ENDS)).toEqual([]);
  });
});
