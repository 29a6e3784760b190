import { type AttributeValue, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { callbackShard, counterKey } from '#functions/adapters/dynamodb/common.js';
import { generateSigningKey, jwks, signJwt } from '#local/jwt.js';

/**
 * Handlers over a mocked DynamoDB (aws-sdk-client-mock): what each request costs in DynamoDB calls and what it
 * writes. Tokens are real JWTs; the JWKS fetch is answered in-process (no network).
 *
 * @covers functions/coordinator/handlers/
 */
const ddb = mockClient(DynamoDBDocumentClient);
const key = generateSigningKey();
const ISSUER = 'https://idp.unit.test';
type Handler = (e: APIGatewayProxyEventV2, c: Context) => Promise<APIGatewayProxyStructuredResultV2>;
const handlers: Record<string, Handler> = {};

beforeAll(async () => {
  Object.assign(process.env, {
    COORDINATOR_TABLE: 'unit-Coordinator',
    STUDIES_TABLE: 'unit-Studies',
    AUTH_ISSUER: ISSUER,
    AUTH_AUDIENCE: 'unit',
    AUTH_JWKS_URI: `${ISSUER}/jwks`,
  });
  delete process.env.RELEASE_STATE_MACHINE_ARN;
  delete process.env.COORDINATOR_TOKEN_URL;
  vi.stubGlobal('fetch', async () => new Response(JSON.stringify(jwks(key)), { status: 200 }));
  for (const name of ['releases', 'events', 'tasks', 'task-services'])
    handlers[name] = (await import(`#functions/coordinator/handlers/${name}.ts`)).handler;
});
afterAll(() => {
  vi.unstubAllGlobals();
  ddb.restore();
});
beforeEach(() => ddb.reset());

const token = (roles: string[]) => signJwt(key, { iss: ISSUER, aud: 'unit', sub: 'u', roles });

async function call(
  name: string,
  method: string,
  path: string,
  opts: { body?: unknown; query?: string; roles?: string[] } = {},
) {
  const event = {
    rawPath: path,
    rawQueryString: opts.query ?? '',
    headers: {
      host: 'api.test',
      'x-forwarded-proto': 'https',
      authorization: `Bearer ${token(opts.roles ?? ['admin'])}`,
    },
    requestContext: { http: { method }, domainName: 'api.test', requestId: 'r' },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEventV2;
  const res = await handlers[name](event, { awsRequestId: 'req-1' } as Context);
  return {
    status: res.statusCode,
    body: res.body ? JSON.parse(res.body) : undefined,
    headers: res.headers ?? {},
  };
}

const releaseItem = {
  pk: 'RE#RE_AAAAAAAA',
  sk: 'RE',
  id: 'RE_AAAAAAAA',
  name: 'r',
  description: '',
  state: 'running',
  studies: ['SD_00000001'],
  version: '0.0.1',
  createdAt: '2026-01-01T00:00:00.000000Z',
  tags: [],
  author: 'a',
  isMajor: false,
  wakePending: false,
};
const taskItem = {
  pk: 'RE#RE_AAAAAAAA',
  sk: 'TA#TA_AAAAAAAA',
  id: 'TA_AAAAAAAA',
  releaseId: 'RE_AAAAAAAA',
  taskServiceId: 'TS_AAAAAAAA',
  serviceName: 'svc',
  state: 'running',
  progress: 10,
  createdAt: '2026-01-01T00:00:00.000000Z',
};
const noteItem = {
  pk: 'RE#RE_AAAAAAAA',
  sk: 'RN#RN_AAAAAAAA',
  id: 'RN_AAAAAAAA',
  releaseId: 'RE_AAAAAAAA',
  studyId: null,
  description: 'n',
  author: 'a',
  createdAt: '2026-01-01T00:00:00.000000Z',
};

describe('GET /releases/<id>', () => {
  it('costs exactly one DynamoDB call: a consistent Query of the release item, its task view and its notes', async () => {
    const taskView = {
      TA_AAAAAAAA: { s: 'running', p: 10, ts: 'TS_AAAAAAAA', n: 'svc', c: '2026-01-01T00:00:00.000000Z' },
    };
    ddb.on(QueryCommand).resolves({
      Items: [releaseItem, { pk: 'RE#RE_AAAAAAAA', sk: 'RE#V', taskView }, noteItem],
    });
    const res = await call('releases', 'GET', '/releases/RE_AAAAAAAA');
    expect(res.status).toBe(200);
    expect(ddb.calls()).toHaveLength(1);
    const input = ddb.commandCalls(QueryCommand)[0].args[0].input;
    expect(input).toMatchObject({
      ConsistentRead: true,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': 'RE#RE_AAAAAAAA', ':from': 'RE', ':to': 'RN~' },
    });
    expect(res.body.notes).toHaveLength(1);
    expect(input.IndexName).toBeUndefined();
    expect(res.body.tasks[0]).toEqual({
      item_id: 'TA_AAAAAAAA',
      kf_id: 'TA_AAAAAAAA',
      state: 'running',
      progress: 10,
      release: 'https://api.test/releases/RE_AAAAAAAA',
      task_service: 'https://api.test/task-services/TS_AAAAAAAA',
      created_at: '2026-01-01T00:00:00.000000Z',
      service_name: 'svc',
    });
    expect(res.body.notes[0].release).toBe('https://api.test/releases/RE_AAAAAAAA');
    expect(res.body).not.toHaveProperty('wakePending');
  });

  it('answers 404 when the collection is empty', async () => {
    ddb.on(QueryCommand).resolves({ Items: [] });
    expect((await call('releases', 'GET', '/releases/RE_BBBBBBBB')).status).toBe(404);
  });

  it('hides internal failures behind a generic 500, keeping the detail in the log', async () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    ddb.on(QueryCommand).rejects(new Error('secret table detail'));
    const res = await call('releases', 'GET', '/releases/RE_BBBBBBBB');
    const logged = stderr.mock.calls.map((c) => String(c[0])).join('');
    stderr.mockRestore();
    expect(res.status).toBe(500);
    expect(JSON.stringify(res.body)).not.toContain('secret');
    expect(res.body.error.code).toBe('internal_error');
    expect(logged).toContain('secret table detail');
  });

  it('refuses a stored item that does not match its schema instead of casting it', async () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    ddb.on(QueryCommand).resolves({ Items: [{ ...releaseItem, state: 'waiting' }] });
    const res = await call('releases', 'GET', '/releases/RE_AAAAAAAA');
    const logged = stderr.mock.calls.map((c) => String(c[0])).join('');
    stderr.mockRestore();
    expect(res.status).toBe(500);
    expect(logged).toContain('does not match its schema');
  });
});

describe('POST /events', () => {
  it('is one TransactWriteItems: the put, its counts and a check per reference', async () => {
    ddb.on(TransactWriteCommand).resolves({});
    ddb.on(GetCommand).resolves({}); // the task service's binding: none (unbound)
    const res = await call('events', 'POST', '/events', {
      roles: ['service'],
      body: { event_type: 'info', message: 'm', release: 'RE_AAAAAAAA', task_service: 'TS_AAAAAAAA' },
    });
    expect(res.status).toBe(200);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(1);
    const items = ddb.commandCalls(TransactWriteCommand)[0].args[0].input.TransactItems ?? [];
    expect(items[0].Put?.ConditionExpression).toBe('attribute_not_exists(pk)');
    expect(items[0].Put?.Item).toMatchObject({
      eventType: 'info',
      releaseId: 'RE_AAAAAAAA',
      gsi2pk: 'EVR#RE_AAAAAAAA',
    });
    // The counts of the lists the event joins: all events and the task service's in their counter items, the
    // release's on one of its view shards.
    expect(items.filter((i) => i.Update).map((i) => String(i.Update?.Key?.pk).replace(/#\d+$/, ''))).toEqual([
      'CNT#TAEV',
      'CNT#EV#TS#TS_AAAAAAAA',
      'RE#RE_AAAAAAAA',
    ]);
    const shard = items.find((i) => i.Update?.Key?.pk === 'RE#RE_AAAAAAAA')?.Update;
    expect(String(shard?.Key?.sk)).toMatch(/^RE#V#[0-7]$/);
    expect(shard).toMatchObject({
      UpdateExpression: 'ADD #n :d',
      ExpressionAttributeNames: { '#n': 'ev' },
      ExpressionAttributeValues: { ':d': 1 },
    });
    expect(items.filter((i) => i.ConditionCheck).map((i) => i.ConditionCheck?.Key)).toEqual([
      { pk: 'RE#RE_AAAAAAAA', sk: 'RE' },
      { pk: 'TS#TS_AAAAAAAA', sk: 'TS' },
    ]);
  });

  it('maps a failed ConditionCheck to a 400 naming the field', async () => {
    ddb.on(TransactWriteCommand).rejects(
      new TransactionCanceledException({
        message: 'cancelled',
        $metadata: {},
        // The event, its two counters, then the release's ConditionCheck.
        CancellationReasons: [
          { Code: 'None' },
          { Code: 'None' },
          { Code: 'None' },
          { Code: 'ConditionalCheckFailed' },
        ],
      }),
    );
    const res = await call('events', 'POST', '/events', { body: { message: 'm', release: 'RE_AAAAAAAA' } });
    expect(res.status).toBe(400);
    expect(res.body.error.fields).toEqual({ release: ['RE_AAAAAAAA does not exist'] });
  });

  it('retries with a fresh id when only the event id collided', async () => {
    ddb
      .on(TransactWriteCommand)
      .rejectsOnce(
        new TransactionCanceledException({
          message: 'cancelled',
          $metadata: {},
          CancellationReasons: [{ Code: 'ConditionalCheckFailed' }],
        }),
      )
      .resolves({});
    const res = await call('events', 'POST', '/events', { body: { message: 'm' } });
    expect(res.status).toBe(200);
    const [a, b] = ddb
      .commandCalls(TransactWriteCommand)
      .map((c) => c.args[0].input.TransactItems?.[0].Put?.Item?.id);
    expect(a).not.toBe(b);
  });

  it('rejects unknown fields before touching DynamoDB', async () => {
    const res = await call('events', 'POST', '/events', { body: { message: 'm', severity: 'high' } });
    expect(res.status).toBe(400);
    expect(res.body.error.fields.body[0]).toContain('severity');
    expect(ddb.calls()).toHaveLength(0);
  });
});

describe('lists', () => {
  it('refuses limit over 100 before touching DynamoDB', async () => {
    const res = await call('events', 'GET', '/events', { query: 'limit=101' });
    expect(res.status).toBe(400);
    expect(ddb.calls()).toHaveLength(0);
  });

  it('reads a filter from its own index partition, newest first, and the count from its counter', async () => {
    ddb.on(QueryCommand).resolves({ Items: [{ ...taskItem, gsi3pk: 'TA#ST#running', gsi3sk: 'x' }] });
    ddb.on(BatchGetCommand).resolves({
      Responses: { 'unit-Coordinator': [{ pk: 'CNT#TAEV#03', 'st:running': 7, 'st:staged': 2, ev: 30 }] },
    });
    const res = await call('tasks', 'GET', '/tasks', { query: 'state=running' });
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(7);
    const [query] = ddb.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(query).toMatchObject({
      IndexName: 'gsi3',
      ExpressionAttributeValues: { ':pk': 'TA#ST#running' },
      ScanIndexForward: false,
    });
    expect(query.FilterExpression).toBeUndefined();
  });

  it('refuses task_service with state (no key holds both) unless release narrows the list', async () => {
    const res = await call('tasks', 'GET', '/tasks', { query: 'state=running&task_service=TS_AAAAAAAA' });
    expect(res.status).toBe(400);
    expect(res.body.error.fields.state[0]).toContain('release');
    expect(ddb.calls()).toHaveLength(0);
  });
});

describe('POST /releases', () => {
  const body = { name: 'r', studies: ['SD_00000001'] };
  const wire = () => {
    ddb.on(BatchGetCommand).resolves({ Responses: { 'unit-Studies': [{ id: 'SD_00000001' }] } });
    ddb.on(GetCommand).resolves({ Item: { pk: 'REGISTRY', sk: 'SERVICES', servicesRev: 3, releaseSeq: 7 } });
    // Maintenance mode was never switched on.
    ddb.on(GetCommand, { Key: { pk: 'MAINTENANCE', sk: 'MAINTENANCE' } }).resolves({});
    ddb.on(QueryCommand).callsFake((input) =>
      input.ExpressionAttributeValues?.[':p'] === 'VERSION'
        ? { Items: [{ version: '2.3.4' }] }
        : {
            Items: [
              {
                pk: 'TS#TS_AAAAAAAA',
                sk: 'TS',
                id: 'TS_AAAAAAAA',
                name: 'on',
                description: '',
                author: '',
                url: 'http://a',
                enabled: true,
                healthStatus: 'ok',
                lastOkStatus: 0,
                createdAt: '2026-01-01T00:00:00.000000Z',
              },
              {
                pk: 'TS#TS_BBBBBBBB',
                sk: 'TS',
                id: 'TS_BBBBBBBB',
                name: 'off',
                description: '',
                author: '',
                url: 'http://b',
                enabled: false,
                healthStatus: 'ok',
                lastOkStatus: 0,
                createdAt: '2026-01-01T00:00:00.000000Z',
              },
            ],
          },
    );
  };

  it('writes release, one task per enabled service, the event and the registry guard in one transaction', async () => {
    wire();
    ddb.on(TransactWriteCommand).resolves({});
    const res = await call('releases', 'POST', '/releases', { body });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: 'initializing', version: '2.3.5', author: 'u' });
    expect(res.body.tasks.map((t: { service_name: string }) => t.service_name)).toEqual(['on']);
    const tx = ddb.commandCalls(TransactWriteCommand);
    expect(tx).toHaveLength(1);
    const items = tx[0].args[0].input.TransactItems ?? [];
    const puts = items.filter((i) => i.Put).map((i) => `${i.Put?.Item?.pk}`.split('#')[0]);
    // The release item, its task view item, the task, the event, the study member.
    expect(puts).toEqual(['RE', 'RE', 'RE', 'EV', 'RS']);
    const registry = items.find((i) => i.Update?.Key?.sk === 'SERVICES');
    expect(registry?.Update?.ConditionExpression).toBe('servicesRev = :rev');
    expect(registry?.Update?.ExpressionAttributeValues?.[':rev']).toBe(3);
    // The enabled service's task count rides on the registry update.
    expect(Object.values(registry?.Update?.ExpressionAttributeNames ?? {})).toEqual(['tasks:TS_AAAAAAAA']);
    // Counter items: releases, releases initializing, the study's releases, and the one that holds the tasks, the
    // pending tasks and all events.
    const counters = items.filter((i) => String(i.Update?.Key?.pk).startsWith('CNT#'));
    expect(counters.map((i) => String(i.Update?.Key?.pk).replace(/#\d+$/, '')).sort()).toEqual([
      'CNT#RE',
      'CNT#RE#SD#SD_00000001',
      'CNT#RE#ST#initializing',
      'CNT#TAEV',
    ]);
    const shared = counters.find((i) => String(i.Update?.Key?.pk).startsWith('CNT#TAEV'))?.Update;
    expect(Object.values(shared?.ExpressionAttributeNames ?? {}).sort()).toEqual(['ev', 'st:pending', 'ta']);
    // The release's event count on a view shard; the release is written in one piece, unmarked.
    expect(items.find((i) => String(i.Update?.Key?.sk).startsWith('RE#V#'))?.Update?.UpdateExpression).toBe(
      'ADD #n :d',
    );
    expect(items.find((i) => i.Put?.Item?.sk === 'RE')?.Put?.Item?.creating).toBeUndefined();
  });

  it('lists the services again when one was deleted meanwhile', async () => {
    wire();
    let calls = 0;
    ddb.on(TransactWriteCommand).callsFake((input) => {
      if (calls++ > 0) return {};
      const items: { Update?: { Key?: { sk?: string } } }[] = input.TransactItems;
      throw new TransactionCanceledException({
        message: 'cancelled',
        $metadata: {},
        CancellationReasons: items.map((i) => ({
          Code: i.Update?.Key?.sk === 'SERVICES' ? 'ConditionalCheckFailed' : 'None',
        })),
      });
    });
    const res = await call('releases', 'POST', '/releases', { body });
    expect(res.status).toBe(200);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(2);
    // The maintenance switch and the highest published version once, then the registry guard per attempt.
    expect(ddb.commandCalls(GetCommand)).toHaveLength(4);
  });

  it('refuses unknown studies with a 400 naming studies and writes nothing', async () => {
    ddb.on(GetCommand).resolves({});
    ddb.on(BatchGetCommand).resolves({ Responses: { 'unit-Studies': [] } });
    const res = await call('releases', 'POST', '/releases', { body });
    expect(res.status).toBe(400);
    expect(res.body.error.fields.studies[0]).toContain('SD_00000001');
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
  });

  it('is admin only', async () => {
    expect((await call('releases', 'POST', '/releases', { body, roles: ['service'] })).status).toBe(403);
    expect(ddb.calls()).toHaveLength(0);
  });

  it('answers 503 with Retry-After in maintenance mode, after one read and before any other', async () => {
    wire();
    ddb.on(GetCommand, { Key: { pk: 'MAINTENANCE', sk: 'MAINTENANCE' } }).resolves({
      Item: {
        pk: 'MAINTENANCE',
        sk: 'MAINTENANCE',
        on: true,
        since: '2026-01-01T00:00:00.000000Z',
        by: 'ops',
        reason: '',
        retryAfterSeconds: 600,
      },
    });
    const res = await call('releases', 'POST', '/releases', { body });
    expect(res.status).toBe(503);
    expect(res.headers['Retry-After']).toBe('600');
    expect(res.body.error.code).toBe('maintenance');
    expect(ddb.calls().map((c) => c.args[0].constructor.name)).toEqual(['GetCommand']);
  });
});

describe('PATCH /tasks/<id>', () => {
  // The task from its id index (gsi2 projects the whole item); a consistent read of the task item and its view
  // shard (the release's phase) when the index's state would refuse the report.
  const wireTask = (state: string, phase = 'running') => {
    ddb
      .on(QueryCommand)
      .callsFake((input) =>
        input.IndexName === 'gsi2' ? { Items: [{ ...taskItem, state, vgs: 3 }] } : { Items: [] },
      );
    ddb.on(BatchGetCommand).callsFake((input) => {
      const [table, { Keys }] = Object.entries(input.RequestItems)[0] as [string, { Keys: { sk: string }[] }];
      return {
        Responses: {
          [table]: Keys.map((k) =>
            k.sk.startsWith('RE#V#') ? { ...k, phase } : { ...taskItem, ...k, state, vgs: 3 },
          ),
        },
      };
    });
    ddb.on(TransactWriteCommand).resolves({});
    // The task's service, read only for a report answered without a write (its binding): one that is gone.
    ddb.on(GetCommand).resolves({});
  };

  it('is one read and one transaction of five items: the task, its view shard, its event, one counter item and the service with its binding', async () => {
    wireTask('running');
    const res = await call('tasks', 'PATCH', '/tasks/TA_AAAAAAAA', {
      roles: ['service'],
      body: { state: 'staged', progress: '100%' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: 'staged', progress: 100 });
    expect(ddb.calls().map((c) => c.args[0].constructor.name)).toEqual([
      'QueryCommand',
      'TransactWriteCommand',
    ]);
    const items = ddb.commandCalls(TransactWriteCommand)[0].args[0].input.TransactItems ?? [];
    const task = items.find((i) => i.Update?.Key?.sk === 'TA#TA_AAAAAAAA');
    expect(task?.Update).toMatchObject({
      ConditionExpression: 'attribute_exists(pk) AND #state IN (:e0)',
      ExpressionAttributeValues: { ':to': 'staged', ':progress': 100, ':e0': 'running' },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
    expect(items.find((i) => i.Put)?.Put?.Item?.message).toBe(
      'task TA_AAAAAAAA changed from running to staged',
    );
    // The release item is left alone (it is projected into three indexes, and every callback of the release would
    // meet there); the task's view shard carries the release's phase as a condition, and records its group's size
    // (3), from which PhaseWatch tells on the stream whether this report completed the group.
    expect(items.some((i) => i.Update?.Key?.sk === 'RE' || i.ConditionCheck?.Key?.sk === 'RE')).toBe(false);
    const shard = items.find((i) => String(i.Update?.Key?.sk).startsWith('RE#V#'));
    expect(shard?.Update?.ConditionExpression).toBe(
      '(attribute_not_exists(#phase) OR #phase IN (:ph0, :ph1, :ph2))',
    );
    expect(shard?.Update?.ExpressionAttributeValues).toMatchObject({
      ':ph0': 'initializing',
      ':ph1': 'running',
      ':ph2': 'staged',
    });
    const names = shard?.Update?.ExpressionAttributeNames ?? {};
    const sizeName = Object.keys(names).find((k) => names[k] === 'size');
    expect(sizeName && shard?.Update?.UpdateExpression).toContain(`${sizeName} = :${sizeName?.slice(1)}`);
    expect(shard?.Update?.ExpressionAttributeValues?.[`:${sizeName?.slice(1)}`]).toBe(3);
    expect(items.some((i) => i.Update?.Key?.sk === 'RE#V')).toBe(false);
    // A service token: the task's service must be unbound or bound to it, a check that writes nothing.
    expect(items).toHaveLength(5);
    expect(items.some((i) => String(i.Update?.Key?.pk).startsWith('TS#'))).toBe(false);
    const service = items.find((i) => i.ConditionCheck?.Key?.pk === `TS#${taskItem.taskServiceId}`);
    expect(service?.ConditionCheck).toMatchObject({
      Key: { pk: `TS#${taskItem.taskServiceId}`, sk: 'TS' },
      ExpressionAttributeValues: { ':me': expect.any(String) },
    });
    // The task's event count on the task, the release's on the shard, the rest on one counter item.
    expect(task?.Update?.UpdateExpression).toContain('ADD #ev :ev');
    expect(task?.Update?.ExpressionAttributeNames).toMatchObject({ '#ev': 'evn' });
    expect(Object.values(names)).toContain('ev');
    const counters = items.filter((i) => String(i.Update?.Key?.pk).startsWith('CNT#'));
    expect(counters).toHaveLength(1);
    // On a shard of the service's group, which also counts the service's events.
    expect(counters[0].Update?.Key).toEqual(
      counterKey('TAEV', callbackShard(taskItem.taskServiceId, taskItem.id)),
    );
    const moved = Object.fromEntries(
      Object.entries(counters[0].Update?.ExpressionAttributeNames ?? {}).map(([n, attr]) => [
        attr,
        counters[0].Update?.ExpressionAttributeValues?.[`:${n.slice(1)}`],
      ]),
    );
    expect(moved).toEqual({
      ev: 1,
      [`ts:${taskItem.taskServiceId}`]: 1,
      'st:running': -1,
      'st:staged': 1,
    });
  });

  const cancelledOnService = (item?: Record<string, AttributeValue>) =>
    new TransactionCanceledException({
      message: 'Transaction cancelled',
      $metadata: { httpStatusCode: 400 },
      CancellationReasons: [
        { Code: 'None' },
        { Code: 'None' },
        { Code: 'None' },
        { Code: 'None' },
        { Code: 'ConditionalCheckFailed', ...(item ? { Item: item } : {}) },
      ],
    });

  it('lets a service that is gone bind nothing, in the check itself: one transaction', async () => {
    wireTask('running');
    ddb.on(TransactWriteCommand).resolves({});
    const res = await call('tasks', 'PATCH', '/tasks/TA_AAAAAAAA', {
      roles: ['service'],
      body: { state: 'staged' },
    });
    expect(res.status).toBe(200);
    const calls = ddb.commandCalls(TransactWriteCommand);
    expect(calls).toHaveLength(1);
    const check = (calls[0].args[0].input.TransactItems ?? []).at(-1)?.ConditionCheck;
    expect(check?.Key?.pk).toBe(`TS#${taskItem.taskServiceId}`);
    // Not quarantined, and then bound to nobody (or gone) or to the caller: a missing item passes the binding part.
    expect(check?.ConditionExpression).toMatch(/ AND \(attribute_not_exists\(pk\) OR /);
  });

  it('answers 403 when the service is bound to another client, writing nothing', async () => {
    wireTask('running');
    ddb.on(TransactWriteCommand).rejects(cancelledOnService({ clientId: { S: 'someone-else' } }));
    const res = await call('tasks', 'PATCH', '/tasks/TA_AAAAAAAA', {
      roles: ['service'],
      body: { state: 'staged' },
    });
    expect(res.status).toBe(403);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(1);
  });

  it('answers 409 to a transition that is not allowed, writing nothing', async () => {
    wireTask('published');
    const res = await call('tasks', 'PATCH', '/tasks/TA_AAAAAAAA', {
      roles: ['service'],
      body: { state: 'running' },
    });
    expect(res.status).toBe(409);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
  });

  it('answers a report of exactly what the task is while the release is live, and 409 once it is over', async () => {
    wireTask('staged', 'staged');
    const same = await call('tasks', 'PATCH', '/tasks/TA_AAAAAAAA', {
      roles: ['service'],
      body: { state: 'staged', progress: taskItem.progress },
    });
    expect(same.status).toBe(200);
    // The service's binding read before anything is answered, then confirmed with one BatchGetItem of the task and
    // its view shard; nothing written.
    expect(ddb.calls().map((c) => c.args[0].constructor.name)).toEqual([
      'QueryCommand',
      'GetCommand',
      'BatchGetCommand',
    ]);
    expect(ddb.commandCalls(GetCommand)[0].args[0].input.Key).toEqual({
      pk: `TS#${taskItem.taskServiceId}`,
      sk: 'TS',
    });
    const keys = ddb.commandCalls(BatchGetCommand)[0].args[0].input.RequestItems;
    expect(Object.values(keys ?? {})[0]).toMatchObject({
      ConsistentRead: true,
      Keys: [{ sk: 'TA#TA_AAAAAAAA' }, { sk: expect.stringMatching(/^RE#V#\d$/) }],
    });
    ddb.reset();
    wireTask('published', 'published');
    for (const body of [{ state: 'published', progress: taskItem.progress }, { state: 'published' }]) {
      const res = await call('tasks', 'PATCH', '/tasks/TA_AAAAAAAA', { roles: ['service'], body });
      expect(res.status).toBe(409);
      expect(res.body.error.message).toContain('release that is published');
    }
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
  });

  it('reads "cancelled" as canceled', async () => {
    wireTask('published');
    const res = await call('tasks', 'PATCH', '/tasks/TA_AAAAAAAA', {
      roles: ['admin'],
      body: { state: 'cancelled' },
    });
    // Understood (not a 400), and judged as the transition published -> canceled.
    expect(res.status).toBe(409);
    expect(res.body.error.message).toContain('to canceled');
  });

  it('is refused to readers', async () => {
    expect(
      (await call('tasks', 'PATCH', '/tasks/TA_AAAAAAAA', { roles: [], body: { progress: 1 } })).status,
    ).toBe(403);
  });
});
