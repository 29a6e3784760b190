import { DynamoDBClient, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { transact } from '../../../functions/adapters/dynamodb/common.js';
import { DynamoReleaseRepository } from '../../../functions/adapters/dynamodb/releases/index.js';
import { isTransient } from '../../../functions/orchestration/changes.js';
import { createTokenVerifier } from '../../../functions/shared/auth.js';
import { authEnv, parseEnv } from '../../../functions/shared/config.js';
import { parseLocalConfig } from '../../../local/config.js';

const ddb = mockClient(DynamoDBDocumentClient);
const doc = DynamoDBDocumentClient.from(
  new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
);
afterEach(() => ddb.reset());

const throttled = () =>
  new TransactionCanceledException({
    message:
      'Transaction cancelled, please refer cancellation reasons for specific reasons [None, ThrottlingError]',
    $metadata: { httpStatusCode: 400 },
    CancellationReasons: [
      { Code: 'None' },
      { Code: 'ThrottlingError', Message: 'Throughput exceeds the limit' },
    ],
  });
const item = { kind: 'x', id: '1', item: { Put: { TableName: 't', Item: { pk: 'a', sk: 'b' } } } };

describe('transactions cancelled for throttling', () => {
  it('are retried until they go through', async () => {
    ddb.on(TransactWriteCommand).rejectsOnce(throttled()).rejectsOnce(throttled()).resolves({});
    expect(await transact(doc, [item, item])).toEqual({ ok: true });
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(3);
  });

  it('surface as a transient error when the throttling outlasts the retries, never as a failed release', async () => {
    ddb.on(TransactWriteCommand).rejects(throttled());
    const err = await transact(doc, [item, item], 3).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(isTransient(err)).toBe(true);
  });
});

describe('the highest published version', () => {
  it('is read with a strongly consistent read of the base table, not from an index', async () => {
    ddb.on(GetCommand).resolves({ Item: { pk: 'VERSION', sk: 'HIGHEST', version: '2.3.0' } });
    ddb.on(QueryCommand).resolves({ Items: [{ version: '1.0.0' }] });
    const repo = new DynamoReleaseRepository(doc, { coordinator: 'c', studies: 's' });
    expect(await repo.highestPublishedVersion()).toBe('2.3.0');
    const reads = [...ddb.commandCalls(GetCommand), ...ddb.commandCalls(QueryCommand)];
    expect(reads.length).toBeGreaterThan(0);
    for (const call of reads) {
      const input = call.args[0].input as { ConsistentRead?: boolean; IndexName?: string };
      expect(input.IndexName).toBeUndefined();
      expect(input.ConsistentRead).toBe(true);
    }
  });
});

describe('the audience check', () => {
  const base = { AUTH_ISSUER: 'https://issuer.example.test' };
  it('fails the configuration at cold start when AUTH_AUDIENCE is empty or missing', () => {
    expect(() => parseEnv(z.object(authEnv), { ...base, AUTH_AUDIENCE: '' })).toThrow(/AUTH_AUDIENCE/);
    expect(() => parseEnv(z.object(authEnv), { ...base, AUTH_AUDIENCE: ' , ' })).toThrow(/AUTH_AUDIENCE/);
    expect(() => parseEnv(z.object(authEnv), base)).toThrow(/AUTH_AUDIENCE/);
  });

  it('never builds a verifier that accepts any audience', () => {
    const config = parseEnv(z.object(authEnv), { ...base, AUTH_AUDIENCE: 'a,b' });
    expect(config.AUTH_AUDIENCE).toEqual(['a', 'b']);
    expect(() => createTokenVerifier({ ...config, AUTH_AUDIENCE: [] })).toThrow(/audience/i);
  });
});

describe('IDP_DEV_TOKENS', () => {
  it('distinguishes unset (loopback only) from an explicit true or false', () => {
    expect(parseLocalConfig({}).IDP_DEV_TOKENS).toBeUndefined();
    expect(parseLocalConfig({ IDP_DEV_TOKENS: 'true' }).IDP_DEV_TOKENS).toBe(true);
    expect(parseLocalConfig({ IDP_DEV_TOKENS: 'false' }).IDP_DEV_TOKENS).toBe(false);
  });
});
