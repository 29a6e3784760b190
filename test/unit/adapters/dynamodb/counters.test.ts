import { describe, expect, it } from 'vitest';
import { C, callbackShard, GROUP_SHARDS, serviceGroupShards } from '#functions/adapters/dynamodb/common.js';
import { CounterDeltas, counterKey, counterKeys, sumCount } from '#functions/adapters/dynamodb/counters.js';

const updates = (d: CounterDeltas) => d.items('t').map((i) => i.item.Update);
const moved = (u: ReturnType<typeof updates>[number]) =>
  Object.fromEntries(
    Object.entries(u?.ExpressionAttributeNames ?? {}).map(([n, attr]) => [
      attr,
      u?.ExpressionAttributeValues?.[`:${n.slice(1)}`],
    ]),
  );

describe('counter deltas', () => {
  it('write the counts a callback moves as one item: all events and the states left and reached', () => {
    const d = new CounterDeltas()
      .add(C.tasksInState('running'), -1)
      .add(C.tasksInState('staged'), 1)
      .add(C.events, 1);
    expect(d.size).toBe(1);
    const [u] = updates(d);
    expect(String(u?.Key?.pk)).toMatch(/^CNT#TAEV#([0-5]\d|6[0-3])$/);
    expect(u?.UpdateExpression).toBe('ADD #c0 :c0, #c1 :c1, #c2 :c2');
    expect(moved(u)).toEqual({ 'st:running': -1, 'st:staged': 1, ev: 1 });
  });

  it('merge deltas of one count, and leave out a count that ends at zero and an item left with none', () => {
    const d = new CounterDeltas()
      .add(C.tasksInState('pending'), 3)
      .add(C.tasksInState('pending'), -3)
      .add(C.releases, 1)
      .add(C.releases, 1);
    expect(d.size).toBe(1);
    const [u] = updates(d);
    expect(u?.Key).toEqual(counterKey('RE', 0));
    expect(moved(u)).toEqual({ n: 2 });
  });

  it('keep counters of different items apart, each on the shard its first delta named', () => {
    const d = new CounterDeltas()
      .add(C.eventsOfService('TS_1'), 1, 13)
      .add(C.eventsOfService('TS_1'), 1, 2)
      .add(C.eventsOfService('TS_2'), 1);
    const [one, two] = updates(d);
    // 13 modulo the service counter's 8 shards.
    expect(one?.Key).toEqual(counterKey('EV#TS#TS_1', 5));
    expect(moved(one)).toEqual({ n: 2 });
    expect(String(two?.Key?.pk)).toMatch(/^CNT#EV#TS#TS_2#0[0-7]$/);
  });
});

describe("the callbacks' counter item", () => {
  it("puts a service's callbacks on the shards of its group, spread by task", () => {
    const group = serviceGroupShards('TS_1');
    expect(group).toHaveLength(GROUP_SHARDS);
    expect(group[0] % GROUP_SHARDS).toBe(0);
    const shards = new Set(
      ['TA_1', 'TA_2', 'TA_3', 'TA_4', 'TA_5', 'TA_6'].map((t) => callbackShard('TS_1', t)),
    );
    for (const s of shards) expect(group).toContain(s);
    expect(shards.size).toBeGreaterThan(1);
    // A callback's counts all land on that shard: the service's events name it, the rest follow.
    const d = new CounterDeltas()
      .add(C.events, 1)
      .add(C.callbackEventsOfService('TS_1'), 1, callbackShard('TS_1', 'TA_1'))
      .add(C.tasksInState('staged'), 1);
    const [u] = updates(d);
    expect(u?.Key).toEqual(counterKey('TAEV', callbackShard('TS_1', 'TA_1')));
    expect(moved(u)).toEqual({ ev: 1, 'ts:TS_1': 1, 'st:staged': 1 });
  });
});

describe('counter reads', () => {
  it('ask for every shard of each counter item once, and sum the attribute of the count asked', () => {
    const keys = counterKeys([C.events, C.tasksInState('staged'), C.releases]);
    expect(keys).toHaveLength(64 + 1);
    expect(keys[0]).toEqual(counterKey('TAEV', 0));
    const items = [
      { ...counterKey('TAEV', 0), ev: 4, 'st:staged': 2 },
      { ...counterKey('TAEV', 9), ev: 3, 'st:running': 7 },
      { ...counterKey('RE', 0), n: 5 },
      // Another counter whose name starts the same: not summed.
      { ...counterKey('TAEV#X', 0), ev: 100 },
    ];
    expect(sumCount(items, C.events)).toBe(7);
    expect(sumCount(items, C.tasksInState('staged'))).toBe(2);
    expect(sumCount(items, C.tasksInState('failed'))).toBe(0);
    expect(sumCount(items, C.releases)).toBe(5);
  });
});
