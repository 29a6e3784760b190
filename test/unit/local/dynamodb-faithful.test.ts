import { Readable } from 'node:stream';
import { DynamoDBClient, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { HttpResponse } from '@smithy/core/protocols';
import { describe, expect, it } from 'vitest';
import {
  CONFLICT_MESSAGE,
  type FaithfulMode,
  FaithfulRules,
  faithfulSettings,
  type Verdict,
} from '#local/dynamodb-faithful.js';

/**
 * The rules of the conflict-faithful DynamoDB, one by one, as "Transaction conflict handling in DynamoDB" states
 * them (local/dynamodb-faithful.ts), on a clock and a die the test controls.
 */
const T = 'tbl';
const key = (pk: string, sk = 'A') => ({ pk: { S: pk }, sk: { S: sk } });
const item = (pk: string, sk = 'A') => ({ ...key(pk, sk), n: { N: '1' } });
const update = (pk: string) => ({
  Update: {
    TableName: T,
    Key: key(pk),
    UpdateExpression: 'SET n = :n',
    ExpressionAttributeValues: { ':n': { N: '2' } },
  },
});
const check = (pk: string) => ({
  ConditionCheck: { TableName: T, Key: key(pk), ConditionExpression: 'attribute_exists(pk)' },
});
const put = (pk: string) => ({ Put: { TableName: T, Item: item(pk) } });
const tx = (...items: unknown[]) => ({ TransactItems: items });

function rules(modes: FaithfulMode[], opts: { share?: number; windowMs?: number; draws?: number[] } = {}) {
  const clock = { t: 0 };
  const draws = [...(opts.draws ?? [])];
  const r = new FaithfulRules(
    { modes: new Set(modes), throttleShare: opts.share ?? 0, windowMs: opts.windowMs ?? 25 },
    () => ({ keys: ['pk', 'sk'] }),
    () => clock.t,
    () => draws.shift() ?? 1,
  );
  return { r, clock };
}

const rejected = (v: Verdict) => (v.forward ? undefined : v.rejection);
const ticket = (v: Verdict) => {
  if (!v.forward) throw new Error(`rejected: ${JSON.stringify(v.rejection.body)}`);
  return v.ticket;
};

describe('DYNAMODB_FAITHFUL settings', () => {
  it('is off unless named, and reads the modes, the share and the window', () => {
    expect(faithfulSettings({})).toBeNull();
    expect(faithfulSettings({ DYNAMODB_FAITHFUL: ' ' })).toBeNull();
    const s = faithfulSettings({
      DYNAMODB_FAITHFUL: 'conflicts, throttle',
      DYNAMODB_THROTTLE_SHARE: '0.1',
      DYNAMODB_CONFLICT_WINDOW_MS: '40',
    });
    expect([...(s?.modes ?? [])]).toEqual(['conflicts', 'throttle']);
    expect(s).toMatchObject({ throttleShare: 0.1, windowMs: 40 });
    expect(faithfulSettings({ DYNAMODB_FAITHFUL: 'conflicts' })).toMatchObject({
      throttleShare: 0.02,
      windowMs: 25,
    });
  });

  it('refuses an unknown mode or an impossible share, naming the variable', () => {
    expect(() => faithfulSettings({ DYNAMODB_FAITHFUL: 'conflicts,chaos' })).toThrow(
      /DYNAMODB_FAITHFUL.*chaos/,
    );
    expect(() => faithfulSettings({ DYNAMODB_FAITHFUL: 'throttle', DYNAMODB_THROTTLE_SHARE: '2' })).toThrow(
      /DYNAMODB_THROTTLE_SHARE/,
    );
    expect(() =>
      faithfulSettings({ DYNAMODB_FAITHFUL: 'conflicts', DYNAMODB_CONFLICT_WINDOW_MS: '0' }),
    ).toThrow(/DYNAMODB_CONFLICT_WINDOW_MS/);
  });
});

describe('conflicts', () => {
  it('cancels a TransactWriteItems that includes an item another ongoing one includes, reason per item', () => {
    const { r } = rules(['conflicts']);
    ticket(r.admit('TransactWriteItems', tx(update('a'), put('b'))));
    const second = rejected(r.admit('TransactWriteItems', tx(put('c'), update('b'))));
    expect(second?.type).toBe('TransactionCanceledException');
    expect(second?.body).toEqual({
      __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
      CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict', Message: CONFLICT_MESSAGE }],
      Message:
        'Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]',
    });
    // Different items do not meet.
    ticket(r.admit('TransactWriteItems', tx(put('d'), put('e'))));
    expect(r.counts.conflicts).toEqual({ TransactWriteItems: 1 });
  });

  it('counts ConditionCheck items as items of the transaction', () => {
    const { r } = rules(['conflicts']);
    ticket(r.admit('TransactWriteItems', tx(check('a'), put('x'))));
    expect(
      rejected(r.admit('TransactWriteItems', tx(check('a'), put('y'))))?.body.CancellationReasons[0].Code,
    ).toBe('TransactionConflict');
  });

  it('holds items until the answer, and at most the window', () => {
    const { r, clock } = rules(['conflicts'], { windowMs: 25 });
    const first = ticket(r.admit('TransactWriteItems', tx(update('a'))));
    clock.t = 10;
    expect(rejected(r.admit('TransactWriteItems', tx(update('a'))))).toBeDefined();
    r.done(first);
    ticket(r.admit('TransactWriteItems', tx(update('a'))));
    // Unanswered for longer than the window (DynamoDB Local's queue): its items are free again.
    clock.t = 40;
    ticket(r.admit('TransactWriteItems', tx(update('a'))));
    expect(r.held()).toBe(1);
  });

  it('fails a PutItem, UpdateItem or DeleteItem of an item in an ongoing transaction with TransactionConflictException', () => {
    const { r } = rules(['conflicts']);
    ticket(r.admit('TransactWriteItems', tx(update('a'))));
    for (const op of ['PutItem', 'UpdateItem', 'DeleteItem']) {
      const body = op === 'PutItem' ? { TableName: T, Item: item('a') } : { TableName: T, Key: key('a') };
      const no = rejected(r.admit(op, body));
      expect(no?.type).toBe('TransactionConflictException');
      expect(no?.body).toEqual({
        __type: 'com.amazonaws.dynamodb.v20120810#TransactionConflictException',
        message: CONFLICT_MESSAGE,
      });
    }
    ticket(r.admit('PutItem', { TableName: T, Item: item('b') }));
  });

  it('does not cancel a transaction that meets an ongoing single write (the guide lists no such conflict)', () => {
    const { r } = rules(['conflicts']);
    ticket(r.admit('UpdateItem', { TableName: T, Key: key('a') }));
    ticket(r.admit('TransactWriteItems', tx(update('a'))));
  });

  it('cancels a TransactGetItems of an item that an ongoing write of any kind includes', () => {
    const get = (pk: string) => ({ TransactItems: [{ Get: { TableName: T, Key: key(pk) } }] });
    const { r } = rules(['conflicts']);
    ticket(r.admit('TransactGetItems', get('a')));
    ticket(r.admit('TransactWriteItems', tx(update('a'))));
    expect(rejected(r.admit('TransactGetItems', get('a')))?.body.CancellationReasons).toEqual([
      { Code: 'TransactionConflict', Message: CONFLICT_MESSAGE },
    ]);
    ticket(r.admit('PutItem', { TableName: T, Item: item('b') }));
    expect(rejected(r.admit('TransactGetItems', get('b')))).toBeDefined();
    ticket(r.admit('BatchWriteItem', { RequestItems: { [T]: [{ DeleteRequest: { Key: key('c') } }] } }));
    expect(rejected(r.admit('TransactGetItems', get('c')))).toBeDefined();
  });

  it('never fails a read: GetItem, BatchGetItem and Query of items in an ongoing transaction go through', () => {
    const { r } = rules(['conflicts']);
    ticket(r.admit('TransactWriteItems', tx(update('a'))));
    ticket(r.admit('GetItem', { TableName: T, Key: key('a') }));
    ticket(r.admit('BatchGetItem', { RequestItems: { [T]: { Keys: [key('a')] } } }));
    ticket(r.admit('Query', { TableName: T, KeyConditionExpression: 'pk = :a' }));
  });

  it('does nothing when only throttling is on', () => {
    const { r } = rules(['throttle'], { share: 0 });
    ticket(r.admit('TransactWriteItems', tx(update('a'))));
    ticket(r.admit('TransactWriteItems', tx(update('a'))));
  });
});

describe('throttling', () => {
  it('fails a single-item request or a query with ThrottlingException, at the share drawn', () => {
    const { r } = rules(['throttle'], { share: 0.5, draws: [0.4, 0.6, 0.1] });
    const no = rejected(r.admit('GetItem', { TableName: T, Key: key('a') }));
    expect(no?.type).toBe('ThrottlingException');
    expect(no?.body).toMatchObject({
      __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException',
      throttlingReasons: [
        { reason: 'TableReadKeyRangeThroughputExceeded', resource: expect.stringContaining(T) },
      ],
    });
    ticket(r.admit('Query', { TableName: T }));
    expect(
      rejected(r.admit('UpdateItem', { TableName: T, Key: key('a') }))?.body.throttlingReasons[0].reason,
    ).toBe('TableWriteKeyRangeThroughputExceeded');
    expect(r.counts.throttled).toEqual({ GetItem: 1, UpdateItem: 1 });
  });

  it('cancels a transaction with ThrottlingError on the items of each throttled partition key', () => {
    // a and a#B share partition a (one draw), b is another partition.
    const { r } = rules(['throttle'], { share: 0.5, draws: [0.9, 0.1] });
    const body = tx(update('b'), { Put: { TableName: T, Item: item('a', 'B') } }, update('a'));
    const no = rejected(r.admit('TransactWriteItems', body));
    expect(no?.body.CancellationReasons.map((x: { Code: string }) => x.Code)).toEqual([
      'None',
      'ThrottlingError',
      'ThrottlingError',
    ]);
  });

  it('hands the keys of throttled partitions of a batch back unprocessed, and throttles a batch that keeps none', () => {
    const { r } = rules(['throttle'], { share: 0.5, draws: [0.9, 0.1] });
    const v = r.admit('BatchGetItem', {
      RequestItems: { [T]: { Keys: [key('a'), key('b'), key('a', 'B')], ConsistentRead: true } },
    });
    expect(v.forward && v.body).toEqual({
      RequestItems: { [T]: { Keys: [key('a'), key('a', 'B')], ConsistentRead: true } },
    });
    expect(v.forward && v.unprocessed).toEqual({
      field: 'UnprocessedKeys',
      value: { [T]: { Keys: [key('b')], ConsistentRead: true } },
    });
    const all = rules(['throttle'], { share: 1, draws: [0] }).r;
    expect(
      rejected(all.admit('BatchWriteItem', { RequestItems: { [T]: [{ PutRequest: { Item: item('a') } }] } }))
        ?.type,
    ).toBe('ThrottlingException');
  });
});

describe('answers the SDK reads', () => {
  it('parses a cancelled transaction with its reasons, in order', async () => {
    const { r } = rules(['conflicts']);
    ticket(r.admit('TransactWriteItems', tx(update('a'))));
    const no = rejected(r.admit('TransactWriteItems', tx(put('z'), update('a'))));
    const client = new DynamoDBClient({
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      // The proxy's answer, as the SDK would receive it over HTTP (no network).
      requestHandler: {
        handle: async () => ({
          response: new HttpResponse({
            statusCode: 400,
            headers: { 'content-type': 'application/x-amz-json-1.0' },
            body: Readable.from([Buffer.from(JSON.stringify(no?.body))]),
          }),
        }),
      },
    });
    const err = await client
      .send(new TransactWriteItemsCommand({ TransactItems: [put('z'), update('a')] as never }))
      .catch((e) => e);
    expect(err.name).toBe('TransactionCanceledException');
    expect(err.CancellationReasons).toEqual([
      { Code: 'None' },
      { Code: 'TransactionConflict', Message: CONFLICT_MESSAGE },
    ]);
    client.destroy();
  });
});
