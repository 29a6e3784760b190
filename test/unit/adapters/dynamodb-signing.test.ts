import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import * as schemas from '@aws-sdk/client-dynamodb/dist-es/schemas/schemas_0.js';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AwsHttp, DYNAMODB_SERVICE } from '../../../functions/adapters/aws-http.js';
import {
  type AnyDocumentCommand,
  BatchGetCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '../../../functions/adapters/dynamodb/documents.js';
import { SdkDocuments } from '../../../functions/adapters/dynamodb/sdk-documents.js';
import { MEMBER_ORDER, SignedDocuments } from '../../../functions/adapters/dynamodb/signed-documents.js';
import { type Canned, RecordingHandler, withoutSdkTelemetry } from '../../helpers/recording-handler.js';

/**
 * The signed DynamoDB adapter (functions/adapters/dynamodb/signed-documents.ts, FilesGraphql's data path) against the
 * SDK's document client (@aws-sdk/lib-dynamodb on @aws-sdk/client-dynamodb, every other function's), command by
 * command, with the same credentials, region, endpoint settings, marshalling options and clock: the requests must be
 * equal in method, URL, every header (Authorization included) and body bytes, and the outputs and errors read from
 * the same answers equal too. The SDK's telemetry headers are taken off its requests before signing; nothing else is.
 */

const NOW = new Date('2025-01-02T03:04:05Z');
const credentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'session-token',
};

interface Setup {
  region: string;
  endpoint?: string;
  useFipsEndpoint?: boolean;
  useDualstackEndpoint?: boolean;
  accountId?: string;
  accountIdEndpointMode?: 'preferred' | 'required' | 'disabled';
}

function pair(setup: Setup = { region: 'eu-west-1' }) {
  const sdkHandler = new RecordingHandler();
  const ourHandler = new RecordingHandler();
  const creds = setup.accountId ? { ...credentials, accountId: setup.accountId } : credentials;
  const config: DynamoDBClientConfig = {
    region: setup.region,
    credentials: creds,
    endpoint: setup.endpoint,
    useFipsEndpoint: setup.useFipsEndpoint ?? false,
    useDualstackEndpoint: setup.useDualstackEndpoint ?? false,
    accountIdEndpointMode: setup.accountIdEndpointMode,
    requestHandler: sdkHandler,
  };
  const client = new DynamoDBClient(config);
  withoutSdkTelemetry(client.middlewareStack);
  const sdk = new SdkDocuments(
    DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }),
  );
  const signed = new SignedDocuments(
    new AwsHttp(DYNAMODB_SERVICE, {
      region: setup.region,
      credentials: creds,
      endpoint: setup.endpoint,
      useFipsEndpoint: setup.useFipsEndpoint ?? false,
      useDualstackEndpoint: setup.useDualstackEndpoint ?? false,
      requestHandler: ourHandler,
    }),
    { marshallOptions: { removeUndefinedValues: true } },
  );
  const answer = (...responses: Canned[]) => {
    sdkHandler.answer(...responses);
    ourHandler.answer(...responses);
  };
  return { sdk, signed, sdkHandler, ourHandler, answer };
}

const withoutMetadata = ({ $metadata: _m, ...rest }: Record<string, unknown>) => rest;

/** Every kind of value the marshaller knows, in a map, a list and a set. */
const VALUES = {
  s: 'text ünïcödé "quoted" \\ slash',
  n: 1.5,
  big: 12345678901,
  neg: -0.25,
  t: true,
  f: false,
  nil: null,
  gone: undefined,
  bytes: new Uint8Array([0, 1, 254, 255]),
  list: [1, 'a', null, { nested: [true] }],
  map: { z: 1, a: { deeper: 'x' } },
  strings: new Set(['b', 'a']),
  numbers: new Set([3, 1.25]),
  empty: '',
};

const CASES: [string, () => AnyDocumentCommand, Canned][] = [
  [
    'GetItem (consistent, projected)',
    () =>
      new GetCommand({
        TableName: 'files',
        Key: { pk: 'FILE#SF_1', sk: 'FILE' },
        ConsistentRead: true,
        ProjectionExpression: '#s, size',
        ExpressionAttributeNames: { '#s': 'state' },
      }),
    {
      body: JSON.stringify({
        Item: {
          pk: { S: 'FILE#SF_1' },
          size: { N: '10' },
          blob: { B: 'AAH+/w==' },
          tags: { SS: ['x', 'y'] },
          nested: { M: { l: { L: [{ N: '1.50' }, { NULL: true }, { BOOL: false }] } } },
        },
      }),
    },
  ],
  [
    'GetItem of a missing item',
    () => new GetCommand({ TableName: 'files', Key: { pk: 'x', sk: 'y' } }),
    { body: '{}' },
  ],
  [
    'PutItem with a condition and every kind of value',
    () =>
      new PutCommand({
        TableName: 'files',
        Item: { pk: 'AUDIT#1', sk: 'AUDIT', ...VALUES },
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    { body: '{}' },
  ],
  [
    'UpdateItem returning the new values',
    () =>
      new UpdateCommand({
        ReturnValues: 'ALL_NEW',
        UpdateExpression: 'SET #c = :c ADD n :one REMOVE old',
        ConditionExpression: '#c = :expected',
        ExpressionAttributeNames: { '#c': 'claimed' },
        ExpressionAttributeValues: { ':c': true, ':one': 1, ':expected': false, ':unused': undefined },
        Key: { pk: 'SIGNED#h', sk: 'TOKEN' },
        TableName: 'files',
      }),
    { body: JSON.stringify({ Attributes: { claimed: { BOOL: true }, n: { N: '2' } } }) },
  ],
  [
    'DeleteItem returning the old item',
    () =>
      new DeleteCommand({
        TableName: 'coordinator',
        Key: { pk: 'EV#1', sk: 'EV' },
        ReturnValues: 'ALL_OLD',
      }),
    { body: JSON.stringify({ Attributes: { pk: { S: 'EV#1' } } }) },
  ],
  [
    'Query of an index page, newest first, filtered, from a start key',
    () =>
      new QueryCommand({
        KeyConditionExpression: 'gsi1pk = :p',
        IndexName: 'gsi1',
        ExpressionAttributeValues: { ':p': 'FILE#SD_1', ':s': 'available', ':n': 3 },
        FilterExpression: '#s = :s AND size > :n',
        ExpressionAttributeNames: { '#s': 'state' },
        ScanIndexForward: false,
        Limit: 25,
        ExclusiveStartKey: { pk: 'FILE#SF_9', sk: 'FILE', gsi1pk: 'FILE#SD_1', gsi1sk: '2025#SF_9' },
        TableName: 'files',
      }),
    {
      body: JSON.stringify({
        Items: [
          { pk: { S: 'a' }, n: { N: '1' } },
          { pk: { S: 'b' }, l: { L: [] } },
        ],
        Count: 2,
        ScannedCount: 5,
        LastEvaluatedKey: { pk: { S: 'b' }, sk: { S: 'FILE' } },
      }),
    },
  ],
  [
    'Query counting (Select COUNT)',
    () =>
      new QueryCommand({
        TableName: 'files',
        KeyConditionExpression: 'pk = :p',
        ExpressionAttributeValues: { ':p': 'x' },
        Select: 'COUNT',
      }),
    { body: JSON.stringify({ Count: 7, ScannedCount: 7 }) },
  ],
  [
    'TransactWriteItems of every kind of item',
    () =>
      new TransactWriteCommand({
        ClientRequestToken: 'b4f1a6c2-58e0-4a3e-9d0b-0c7b0f6c1a2e',
        TransactItems: [
          {
            Put: {
              TableName: 'files',
              Item: { pk: 'FILE#1', sk: 'FILE', ...VALUES },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Update: {
              ExpressionAttributeValues: { ':n': 1, ':b': 10 },
              UpdateExpression: 'ADD versions :n, bytes :b',
              TableName: 'files',
              Key: { pk: 'TOTALS#3', sk: 'TOTALS' },
            },
          },
          {
            Delete: {
              TableName: 'files',
              Key: { pk: 'V#1', sk: 'V' },
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
          {
            ConditionCheck: {
              TableName: 'studies',
              Key: { pk: 'SD#1', sk: 'SD' },
              ConditionExpression: 'deleted <> :t',
              ExpressionAttributeValues: { ':t': true },
            },
          },
        ],
      }),
    { body: '{}' },
  ],
  [
    'BatchGetItem of two tables, with unprocessed keys',
    () =>
      new BatchGetCommand({
        RequestItems: {
          studies: {
            Keys: [
              { pk: 'SD#1', sk: 'SD' },
              { pk: 'SD#2', sk: 'SD' },
            ],
            ConsistentRead: true,
          },
          files: { ProjectionExpression: 'pk', Keys: [{ pk: 'F#1', sk: 'F' }] },
        },
      }),
    {
      body: JSON.stringify({
        Responses: { studies: [{ pk: { S: 'SD#1' }, name: { S: 'n' } }], files: [] },
        UnprocessedKeys: {
          studies: { Keys: [{ pk: { S: 'SD#2' }, sk: { S: 'SD' } }], ConsistentRead: true },
        },
      }),
    },
  ],
];

describe('signed DynamoDB requests equal the SDK document client’s', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: NOW, toFake: ['Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it.each(CASES)('%s', async (_name, command, canned) => {
    const { sdk, signed, sdkHandler, ourHandler, answer } = pair();
    answer({ ...canned, headers: { 'x-amzn-requestid': 'RID' } });
    const expected = await sdk.send(command());
    const actual = await signed.send(command());
    expect(ourHandler.last()).toEqual(sdkHandler.last());
    expect(withoutMetadata(actual)).toEqual(withoutMetadata(expected));
    expect(actual.$metadata).toMatchObject({ httpStatusCode: 200, requestId: 'RID' });
  });

  it('gives a transaction an idempotency token when it has none, and keeps it across retries', async () => {
    const { signed, ourHandler, answer } = pair();
    answer(
      {
        status: 500,
        body: '{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"x"}',
      },
      { status: 200, body: '{}' },
    );
    await signed.send(
      new TransactWriteCommand({ TransactItems: [{ Delete: { TableName: 't', Key: { pk: 'a' } } }] }),
    );
    const tokens = ourHandler.requests.map((r) => JSON.parse(String(r.body)).ClientRequestToken);
    expect(tokens).toHaveLength(2);
    expect(tokens[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(tokens[1]).toBe(tokens[0]);
  });

  it('lays out every member in the order of the SDK’s own schemas', () => {
    const shapes: Record<string, unknown> = {
      GetItem: schemas.GetItemInput$,
      PutItem: schemas.PutItemInput$,
      UpdateItem: schemas.UpdateItemInput$,
      DeleteItem: schemas.DeleteItemInput$,
      Query: schemas.QueryInput$,
      TransactWriteItems: schemas.TransactWriteItemsInput$,
      TransactWriteItem: schemas.TransactWriteItem$,
      ConditionCheck: schemas.ConditionCheck$,
      Put: schemas.Put$,
      Delete: schemas.Delete$,
      Update: schemas.Update$,
      BatchGetItem: schemas.BatchGetItemInput$,
      KeysAndAttributes: schemas.KeysAndAttributes$,
    };
    for (const [shape, schema] of Object.entries(shapes))
      expect(MEMBER_ORDER[shape as keyof typeof MEMBER_ORDER], shape).toEqual((schema as unknown[])[4]);
  });

  it('refuses the legacy parameters it does not lay out, before sending anything', async () => {
    const { signed, ourHandler } = pair();
    await expect(
      signed.send(
        new QueryCommand({
          TableName: 't',
          KeyConditions: { pk: { ComparisonOperator: 'EQ', AttributeValueList: ['a'] } },
        }),
      ),
    ).rejects.toThrow('KeyConditions is not supported');
    expect(ourHandler.requests).toHaveLength(0);
  });
});

describe('DynamoDB errors and retries as the SDK has them', () => {
  const errors: [string, Canned, number][] = [
    [
      'a failed condition',
      {
        status: 400,
        body: '{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"}',
      },
      1,
    ],
    [
      'a cancelled transaction, with its reasons',
      {
        status: 400,
        body: JSON.stringify({
          __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
          Message:
            'Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]',
          CancellationReasons: [
            { Code: 'None' },
            { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' },
          ],
        }),
      },
      1,
    ],
    [
      'throttling, retried four times in all',
      {
        status: 400,
        body: '{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"slow down"}',
      },
      4,
    ],
    [
      'a server error, retried',
      { status: 500, body: '{"__type":"InternalServerError","message":"oops"}' },
      4,
    ],
    [
      'an unknown table',
      {
        status: 400,
        body: '{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}',
      },
      1,
    ],
  ];

  it.each(errors)('%s', async (_name, canned, attempts) => {
    const { sdk, signed, sdkHandler, ourHandler, answer } = pair();
    answer({ ...canned, headers: { 'x-amzn-requestid': 'R1' } });
    const command = () =>
      new TransactWriteCommand({
        ClientRequestToken: 't',
        TransactItems: [{ Put: { TableName: 't', Item: { pk: 'a' } } }],
      });
    const sdkErr = await sdk.send(command()).catch((e) => e);
    const ourErr = await signed.send(command()).catch((e) => e);
    const shape = (e: any) => ({
      name: e.name,
      message: e.message,
      $fault: e.$fault,
      status: e.$metadata?.httpStatusCode,
      requestId: e.$metadata?.requestId,
      attempts: e.$metadata?.attempts,
      reasons: e.CancellationReasons,
    });
    expect(shape(ourErr)).toEqual(shape(sdkErr));
    expect(ourHandler.requests).toHaveLength(attempts);
    expect(sdkHandler.requests).toHaveLength(attempts);
  });
});

describe('DynamoDB endpoints as the SDK resolves them', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: NOW, toFake: ['Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const setups: [string, Setup][] = [
    ['a region', { region: 'ap-southeast-2' }],
    ['China', { region: 'cn-north-1' }],
    ['FIPS', { region: 'us-east-2', useFipsEndpoint: true }],
    ['FIPS in GovCloud', { region: 'us-gov-west-1', useFipsEndpoint: true }],
    [
      'FIPS and dual-stack in GovCloud',
      { region: 'us-gov-east-1', useFipsEndpoint: true, useDualstackEndpoint: true },
    ],
    ['dual-stack', { region: 'eu-west-1', useDualstackEndpoint: true }],
    ['FIPS and dual-stack', { region: 'us-east-1', useFipsEndpoint: true, useDualstackEndpoint: true }],
    ['DynamoDB Local', { region: 'us-east-1', endpoint: 'http://127.0.0.1:8210' }],
    ['an endpoint with a path', { region: 'us-east-1', endpoint: 'https://ddb.example.org/base' }],
    [
      'an endpoint with a path and a query',
      { region: 'us-east-1', endpoint: 'https://ddb.example.org/a/b/?x=1' },
    ],
    ['credentials with an account id', { region: 'eu-west-1', accountId: '123456789012' }],
    [
      'an account id, dual-stack',
      { region: 'eu-west-1', accountId: '123456789012', useDualstackEndpoint: true },
    ],
    ['an account id, FIPS', { region: 'us-east-1', accountId: '123456789012', useFipsEndpoint: true }],
    [
      'an account id, account endpoints disabled',
      { region: 'eu-west-1', accountId: '123456789012', accountIdEndpointMode: 'disabled' },
    ],
    [
      'an account id and a custom endpoint',
      { region: 'eu-west-1', accountId: '123456789012', endpoint: 'http://127.0.0.1:8210' },
    ],
  ];

  it.each(setups)('%s', async (_name, setup) => {
    if (setup.accountIdEndpointMode) process.env.AWS_ACCOUNT_ID_ENDPOINT_MODE = setup.accountIdEndpointMode;
    try {
      const { sdk, signed, sdkHandler, ourHandler, answer } = pair(setup);
      answer({ body: '{}' });
      await sdk.send(new GetCommand({ TableName: 't', Key: { pk: 'a' } }));
      await signed.send(new GetCommand({ TableName: 't', Key: { pk: 'a' } }));
      expect(ourHandler.last()).toEqual(sdkHandler.last());
    } finally {
      delete process.env.AWS_ACCOUNT_ID_ENDPOINT_MODE;
    }
  });

  it.each<[string, Setup]>([
    [
      'FIPS with a custom endpoint',
      { region: 'us-east-1', endpoint: 'http://127.0.0.1:8210', useFipsEndpoint: true },
    ],
    [
      'dual-stack with a custom endpoint',
      { region: 'us-east-1', endpoint: 'http://127.0.0.1:8210', useDualstackEndpoint: true },
    ],
    [
      'account endpoints required without an account id',
      { region: 'eu-west-1', accountIdEndpointMode: 'required' },
    ],
    ['an account id that is no host name', { region: 'eu-west-1', accountId: 'not an id!' }],
  ])('refuses %s as the SDK does', async (_name, setup) => {
    if (setup.accountIdEndpointMode) process.env.AWS_ACCOUNT_ID_ENDPOINT_MODE = setup.accountIdEndpointMode;
    try {
      const { sdk, signed, answer } = pair(setup);
      answer({ body: '{}' });
      const sdkErr = await sdk.send(new GetCommand({ TableName: 't', Key: { pk: 'a' } })).catch((e) => e);
      expect(sdkErr).toBeInstanceOf(Error);
      await expect(signed.send(new GetCommand({ TableName: 't', Key: { pk: 'a' } }))).rejects.toThrow(
        sdkErr.message,
      );
    } finally {
      delete process.env.AWS_ACCOUNT_ID_ENDPOINT_MODE;
    }
  });
});
