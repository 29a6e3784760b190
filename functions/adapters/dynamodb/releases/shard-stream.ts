import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import type { GroupCompleted } from '#functions/orchestration/ports.js';
import type { TaskState } from '#packages/task-service/src/protocol.js';
import { SHARD } from './items.js';

const SHARD_SK = 'RE#V#';
const RELEASE_PK = 'RE#';

type Image = Record<string, unknown>;
const image = (i: Record<string, unknown> | undefined): Image | undefined =>
  i ? unmarshall(i as Record<string, AttributeValue>) : undefined;
const count = (img: Image | undefined, state: TaskState) => {
  const n = img?.[SHARD.count(state)];
  return typeof n === 'number' ? n : 0;
};

/**
 * The view shard writes among stream records that completed their group in one of `states`: the shard knows its
 * group's size (SHARD.size, written by the task reports), and the write took the group's count of the state to it
 * from below. Other records (other items, removals, shards without a size: a group no report has written yet) are
 * not completions. The stream's event filter already keeps only shard records on AWS; the local poller hands every
 * record, hence the key check.
 */
export function groupsCompleted(
  records: readonly DynamoDBRecord[],
  states: readonly TaskState[],
): GroupCompleted[] {
  const out: GroupCompleted[] = [];
  for (const r of records) {
    if (r.eventName !== 'INSERT' && r.eventName !== 'MODIFY') continue;
    const keys = image(r.dynamodb?.Keys as Record<string, unknown> | undefined);
    const pk = keys?.pk;
    const sk = keys?.sk;
    if (typeof pk !== 'string' || typeof sk !== 'string') continue;
    if (!pk.startsWith(RELEASE_PK) || !sk.startsWith(SHARD_SK)) continue;
    const after = image(r.dynamodb?.NewImage as Record<string, unknown> | undefined);
    const before = image(r.dynamodb?.OldImage as Record<string, unknown> | undefined);
    const size = after?.[SHARD.size];
    if (typeof size !== 'number' || size < 1) continue;
    for (const state of states)
      if (count(after, state) === size && count(before, state) < size)
        out.push({ releaseId: pk.slice(RELEASE_PK.length), state });
  }
  return out;
}
