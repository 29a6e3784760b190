import { NODE_ACCOUNT_ID_ENDPOINT_MODE_CONFIG_OPTIONS } from '@aws-sdk/core/account-id-endpoint';
import { marshall, type marshallOptions, unmarshall, type unmarshallOptions } from '@aws-sdk/util-dynamodb';
import { loadConfig } from '@smithy/core/config';
import { type HttpResponse, loadJsonRpcErrorCode } from '@smithy/core/protocols';
import { fromBase64, toBase64, toUtf8, v4 } from '@smithy/core/serde';
import { isValidHostLabel } from '@smithy/core/transport';
import {
  type AwsHttp,
  customEndpoint,
  drain,
  endpointPath,
  errorMetadata,
  postRequest,
  type ServiceError,
  type ServiceSettings,
  supportedPartition,
} from '../aws-http.js';
import type { AnyDocumentCommand, DocumentOperation, Documents } from './documents.js';

/**
 * The Documents port on signed requests (functions/adapters/aws-http.ts) instead of the SDK's DynamoDB client, for
 * the function whose bundle cannot carry both that client and graphql-js: FilesGraphql (docs/architecture.md,
 * "Bundle size"). Every request is the one @aws-sdk/lib-dynamodb's document client sends for the same command:
 * values marshalled by @aws-sdk/util-dynamodb at the places lib-dynamodb marshals them, members in the order the
 * SDK writes them (the DynamoDB model's), an idempotency token on TransactWriteItems, the same endpoint rules, retry
 * settings (4 attempts, 25 ms base) and error shapes. test/unit/adapters/dynamodb-signing.test.ts compares the two
 * byte for byte, signature included, and the file-service repository tests run on both.
 */

/** lib-dynamodb's marshalling paths: null marshals the value itself, {} every value of a map, [] every member. */
type KeyNodes = null | { [key: string]: KeyNodes } | KeyNodes[];
const SELF: KeyNodes = null;
const ALL_VALUES: KeyNodes = {};
const ALL_MEMBERS: KeyNodes = [];

/** What lib-dynamodb marshals in each input and unmarshals in each output (its commands' key nodes). */
const NODES: Record<
  DocumentOperation,
  { input: Record<string, KeyNodes>; output: Record<string, KeyNodes> }
> = {
  GetItem: { input: { Key: ALL_VALUES }, output: { Item: ALL_VALUES } },
  PutItem: {
    input: {
      Item: ALL_VALUES,
      Expected: { '*': { Value: SELF, AttributeValueList: ALL_MEMBERS } },
      ExpressionAttributeValues: ALL_VALUES,
    },
    output: { Attributes: ALL_VALUES, ItemCollectionMetrics: { ItemCollectionKey: ALL_VALUES } },
  },
  UpdateItem: {
    input: {
      Key: ALL_VALUES,
      AttributeUpdates: { '*': { Value: SELF } },
      Expected: { '*': { Value: SELF, AttributeValueList: ALL_MEMBERS } },
      ExpressionAttributeValues: ALL_VALUES,
    },
    output: { Attributes: ALL_VALUES, ItemCollectionMetrics: { ItemCollectionKey: ALL_VALUES } },
  },
  DeleteItem: {
    input: {
      Key: ALL_VALUES,
      Expected: { '*': { Value: SELF, AttributeValueList: ALL_MEMBERS } },
      ExpressionAttributeValues: ALL_VALUES,
    },
    output: { Attributes: ALL_VALUES, ItemCollectionMetrics: { ItemCollectionKey: ALL_VALUES } },
  },
  Query: {
    input: {
      KeyConditions: { '*': { AttributeValueList: ALL_MEMBERS } },
      QueryFilter: { '*': { AttributeValueList: ALL_MEMBERS } },
      ExclusiveStartKey: ALL_VALUES,
      ExpressionAttributeValues: ALL_VALUES,
    },
    output: { Items: { '*': ALL_VALUES }, LastEvaluatedKey: ALL_VALUES },
  },
  TransactWriteItems: {
    input: {
      TransactItems: {
        '*': {
          ConditionCheck: { Key: ALL_VALUES, ExpressionAttributeValues: ALL_VALUES },
          Put: { Item: ALL_VALUES, ExpressionAttributeValues: ALL_VALUES },
          Delete: { Key: ALL_VALUES, ExpressionAttributeValues: ALL_VALUES },
          Update: { Key: ALL_VALUES, ExpressionAttributeValues: ALL_VALUES },
        },
      },
    },
    output: { ItemCollectionMetrics: { '*': { '*': { ItemCollectionKey: ALL_VALUES } } } },
  },
  BatchGetItem: {
    input: { RequestItems: { '*': { Keys: { '*': ALL_VALUES } } } },
    output: {
      Responses: { '*': { '*': ALL_VALUES } },
      UnprocessedKeys: { '*': { Keys: { '*': ALL_VALUES } } },
    },
  },
};

// lib-dynamodb's traversal (its commands/utils.ts), so values are marshalled exactly where and as it marshals them.
type Fn = (v: unknown) => unknown;
function processObj(obj: unknown, fn: Fn, nodes: KeyNodes): unknown {
  if (obj === undefined) return undefined;
  if (nodes == null) return fn(obj);
  const keys = Object.keys(nodes);
  if (keys.length === 1 && keys[0] === '*') {
    const next = (nodes as Record<string, KeyNodes>)['*'];
    const acc: Record<string, unknown> | unknown[] = Array.isArray(obj) ? [] : {};
    for (const [k, v] of Object.entries(obj ?? {}))
      if (typeof v !== 'function') (acc as Record<string, unknown>)[k] = processObj(v, fn, next);
    return acc;
  }
  if (keys.length === 0) return processAll(obj, fn);
  return processKeys(obj as Record<string, unknown>, fn, nodes as Record<string, KeyNodes>);
}
function processKeys(obj: Record<string, unknown>, fn: Fn, nodes: Record<string, KeyNodes>): unknown {
  const acc: Record<string, unknown> | unknown[] = Array.isArray(obj)
    ? obj.filter((v) => typeof v !== 'function')
    : Object.fromEntries(Object.entries(obj).filter(([, v]) => typeof v !== 'function'));
  for (const [key, node] of Object.entries(nodes)) {
    if (typeof obj[key] === 'function') continue;
    const value = processObj(obj[key], fn, node);
    if (value !== undefined && typeof value !== 'function') (acc as Record<string, unknown>)[key] = value;
  }
  return acc;
}
function processAll(obj: unknown, fn: Fn): unknown {
  if (Array.isArray(obj))
    return obj.filter((v) => typeof v !== 'function').map((v) => processObj(v, fn, SELF));
  const acc: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(obj as Record<string, unknown>)) {
    if (typeof v === 'function') continue;
    const value = processObj(v, fn, SELF);
    if (value !== undefined && typeof value !== 'function') acc[key] = value;
  }
  return acc;
}

/**
 * The order the SDK writes each structure's members in (the DynamoDB model's; the unit test reads them from the
 * SDK's schemas). Maps keep their own order; members not listed here are not supported and refused.
 */
// biome-ignore format: one structure per line, as the model lists it
const MEMBERS = {
  GetItem: ['TableName', 'Key', 'AttributesToGet', 'ConsistentRead', 'ReturnConsumedCapacity', 'ProjectionExpression', 'ExpressionAttributeNames'],
  PutItem: ['TableName', 'Item', 'Expected', 'ReturnValues', 'ReturnConsumedCapacity', 'ReturnItemCollectionMetrics', 'ConditionalOperator', 'ConditionExpression', 'ExpressionAttributeNames', 'ExpressionAttributeValues', 'ReturnValuesOnConditionCheckFailure'],
  UpdateItem: ['TableName', 'Key', 'AttributeUpdates', 'Expected', 'ConditionalOperator', 'ReturnValues', 'ReturnConsumedCapacity', 'ReturnItemCollectionMetrics', 'UpdateExpression', 'ConditionExpression', 'ExpressionAttributeNames', 'ExpressionAttributeValues', 'ReturnValuesOnConditionCheckFailure'],
  DeleteItem: ['TableName', 'Key', 'Expected', 'ConditionalOperator', 'ReturnValues', 'ReturnConsumedCapacity', 'ReturnItemCollectionMetrics', 'ConditionExpression', 'ExpressionAttributeNames', 'ExpressionAttributeValues', 'ReturnValuesOnConditionCheckFailure'],
  Query: ['TableName', 'IndexName', 'Select', 'AttributesToGet', 'Limit', 'ConsistentRead', 'KeyConditions', 'QueryFilter', 'ConditionalOperator', 'ScanIndexForward', 'ExclusiveStartKey', 'ReturnConsumedCapacity', 'ProjectionExpression', 'FilterExpression', 'KeyConditionExpression', 'ExpressionAttributeNames', 'ExpressionAttributeValues'],
  TransactWriteItems: ['TransactItems', 'ReturnConsumedCapacity', 'ReturnItemCollectionMetrics', 'ClientRequestToken'],
  TransactWriteItem: ['ConditionCheck', 'Put', 'Delete', 'Update'],
  ConditionCheck: ['Key', 'TableName', 'ConditionExpression', 'ExpressionAttributeNames', 'ExpressionAttributeValues', 'ReturnValuesOnConditionCheckFailure'],
  Put: ['Item', 'TableName', 'ConditionExpression', 'ExpressionAttributeNames', 'ExpressionAttributeValues', 'ReturnValuesOnConditionCheckFailure'],
  Delete: ['Key', 'TableName', 'ConditionExpression', 'ExpressionAttributeNames', 'ExpressionAttributeValues', 'ReturnValuesOnConditionCheckFailure'],
  Update: ['Key', 'UpdateExpression', 'TableName', 'ConditionExpression', 'ExpressionAttributeNames', 'ExpressionAttributeValues', 'ReturnValuesOnConditionCheckFailure'],
  BatchGetItem: ['RequestItems', 'ReturnConsumedCapacity'],
  KeysAndAttributes: ['Keys', 'AttributesToGet', 'ConsistentRead', 'ProjectionExpression', 'ExpressionAttributeNames'],
} as const;
export const MEMBER_ORDER: Record<keyof typeof MEMBERS, readonly string[]> = MEMBERS;

/** Legacy parameters whose nested structures this adapter does not lay out; the repositories use expressions. */
const LEGACY = new Set(['Expected', 'AttributeUpdates', 'KeyConditions', 'QueryFilter']);

/** A structure's members in the SDK's order, each laid out by `inner` (which knows its nested structures). */
function ordered(
  shape: keyof typeof MEMBERS,
  value: Record<string, unknown>,
  inner: (member: string, v: unknown) => unknown = (_m, v) => v,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value))
    if (!MEMBERS[shape].includes(key as never) || LEGACY.has(key))
      throw new Error(`DynamoDB ${shape}: ${key} is not supported by the signed adapter`);
  for (const member of MEMBERS[shape]) {
    const v = value[member];
    if (v !== undefined && v !== null) out[member] = inner(member, v);
  }
  return out;
}

function body(operation: DocumentOperation, input: Record<string, unknown>): Record<string, unknown> {
  switch (operation) {
    case 'TransactWriteItems':
      return ordered(
        'TransactWriteItems',
        { ...input, ClientRequestToken: input.ClientRequestToken ?? v4() },
        (m, v) =>
          m === 'TransactItems'
            ? (v as Record<string, unknown>[]).map((item) =>
                ordered('TransactWriteItem', item, (kind, op) =>
                  ordered(kind as 'Put', op as Record<string, unknown>),
                ),
              )
            : v,
      );
    case 'BatchGetItem':
      return ordered('BatchGetItem', input, (m, v) =>
        m === 'RequestItems'
          ? Object.fromEntries(
              Object.entries(v as Record<string, Record<string, unknown>>).map(([table, keys]) => [
                table,
                ordered('KeysAndAttributes', keys),
              ]),
            )
          : v,
      );
    default:
      return ordered(operation, input);
  }
}

/** JSON as the SDK writes it: binary attribute values (B, BS) as base64. */
function toJson(value: unknown): string {
  return JSON.stringify(value, function (this: Record<string, unknown>, key, v) {
    const raw = this[key];
    return raw instanceof Uint8Array ? toBase64(raw) : v;
  });
}

/** Binary attribute values come back as base64; the SDK hands them to unmarshall as bytes. */
function withBytes(av: unknown): unknown {
  if (Array.isArray(av)) return av.map(withBytes);
  if (typeof av !== 'object' || av === null) return av;
  const [[type, v]] = Object.entries(av as Record<string, unknown>);
  if (type === 'B' && typeof v === 'string') return { B: fromBase64(v) };
  if (type === 'BS' && Array.isArray(v)) return { BS: v.map((b) => fromBase64(b as string)) };
  if (type === 'L' && Array.isArray(v)) return { L: v.map(withBytes) };
  if (type === 'M' && v && typeof v === 'object')
    return { M: Object.fromEntries(Object.entries(v).map(([k, x]) => [k, withBytes(x)])) };
  return av;
}

/** DynamoDB's endpoint by the SDK's DynamoDB ruleset (custom, local, FIPS, dual-stack, account-based). */
export function dynamodbEndpoint(
  settings: ServiceSettings,
  account: { accountId?: string; mode: 'preferred' | 'required' | 'disabled' },
): URL {
  const custom = customEndpoint(settings);
  if (custom) return custom;
  const { region, useFipsEndpoint, useDualstackEndpoint } = settings;
  // The SDK's developer shortcut (region "local" = http://localhost:8000, signed for us-east-1) is not used here:
  // the local stack names DynamoDB Local with AWS_ENDPOINT_URL_DYNAMODB.
  if (region === 'local')
    throw new Error('The "local" region is not supported here; set AWS_ENDPOINT_URL_DYNAMODB');
  const { p, suffix } = supportedPartition(settings);
  if (useFipsEndpoint) {
    if (account.mode === 'required')
      throw new Error(
        'Invalid Configuration: AccountIdEndpointMode is required and FIPS is enabled, but FIPS account endpoints are not supported',
      );
    // GovCloud's regional DynamoDB endpoints are the FIPS ones.
    if (p.name === 'aws-us-gov' && !useDualstackEndpoint)
      return new URL(`https://dynamodb.${region}.${suffix}`);
    return new URL(`https://dynamodb-fips.${region}.${suffix}`);
  }
  if (account.mode === 'required' && !account.accountId)
    throw new Error('AccountIdEndpointMode is required but no AccountID was provided or able to be loaded');
  if (account.mode !== 'disabled' && account.accountId) {
    if (!isValidHostLabel(account.accountId))
      throw new Error('Credentials-sourced account ID parameter is invalid');
    return new URL(`https://${account.accountId}.ddb.${region}.${suffix}`);
  }
  return new URL(`https://dynamodb.${region}.${suffix}`);
}

/** DynamoDB's JSON error as the SDK reads it: the code from __type (or the header), fields copied. */
export function dynamodbError(response: HttpResponse, bytes: Uint8Array): ServiceError {
  const text = toUtf8(bytes);
  let data: Record<string, unknown> = {};
  try {
    data = text ? JSON.parse(text) : {};
  } catch (err) {
    return Object.assign(err as Error, { $metadata: errorMetadata(response).$metadata }) as ServiceError;
  }
  const name = loadJsonRpcErrorCode(response, data) || 'Unknown';
  const message = String(data.message ?? data.Message ?? 'UnknownError');
  return Object.assign(new Error(message), data, errorMetadata(response), { name, message });
}

export class SignedDocuments implements Documents {
  readonly adapter = 'signed';
  private readonly marshallOptions: marshallOptions;
  private readonly unmarshallOptions: unmarshallOptions;
  private readonly accountMode: () => Promise<'preferred' | 'required' | 'disabled'>;

  constructor(
    private readonly http: AwsHttp,
    translate: { marshallOptions?: marshallOptions; unmarshallOptions?: unmarshallOptions } = {},
  ) {
    // As lib-dynamodb completes them: top-level maps and lists marshalled whole, items read without a map wrapper.
    this.marshallOptions = { convertTopLevelContainer: true, ...translate.marshallOptions };
    this.unmarshallOptions = { convertWithoutMapWrapper: true, ...translate.unmarshallOptions };
    this.accountMode = loadConfig(NODE_ACCOUNT_ID_ENDPOINT_MODE_CONFIG_OPTIONS) as () => Promise<
      'preferred' | 'required' | 'disabled'
    >;
  }

  async send<C extends AnyDocumentCommand>(command: C): Promise<C['$output']> {
    const { operation } = command;
    const nodes = NODES[operation];
    const marshalled = processKeys(
      command.input as Record<string, unknown>,
      (v) => marshall(v as never, this.marshallOptions),
      nodes.input as Record<string, KeyNodes>,
    ) as Record<string, unknown>;
    // Laid out once: a retry sends the same bytes (and the same idempotency token).
    const payload = toJson(body(operation, marshalled));
    const response = await this.http.send(
      async () => {
        const [settings, identity, mode] = await Promise.all([
          this.http.settings(),
          this.http.identity(),
          this.accountMode(),
        ]);
        const url = dynamodbEndpoint(settings, { accountId: identity.accountId, mode });
        return postRequest(
          url,
          endpointPath(url),
          {
            'content-type': 'application/x-amz-json-1.0',
            'x-amz-target': `DynamoDB_20120810.${operation}`,
          },
          payload,
        );
      },
      dynamodbError,
      () => undefined,
    );
    const text = toUtf8(await drain(response));
    const data = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
    const output = processKeys(
      data,
      (av) => unmarshall(withBytes(av) as never, this.unmarshallOptions),
      nodes.output as Record<string, KeyNodes>,
    ) as Record<string, unknown>;
    return { ...output, $metadata: errorMetadata(response).$metadata } as C['$output'];
  }
}
