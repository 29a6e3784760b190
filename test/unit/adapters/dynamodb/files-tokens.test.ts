import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DynamoDevTokenRepository,
  DynamoSignedTokenRepository,
} from '#functions/adapters/dynamodb/files-tokens.js';
import type { AuditRecord } from '#functions/files/model.js';

const ddb = mockClient(DynamoDBDocumentClient);
const doc = DynamoDBDocumentClient.from(
  new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
);
afterEach(() => ddb.reset());

const target = { studyId: 'SD_AAAAAAAA', fileId: 'SF_BBBBBBBB', versionId: 'FV_CCCCCCCC' };
const stored = {
  pk: 'SIGNED#h',
  sk: 'TOKEN',
  study_id: target.studyId,
  file_id: target.fileId,
  version_id: target.versionId,
  created_at: '2026-01-01T00:00:00.000000Z',
  created_by: 'u',
  dev_token: null,
  expires_at_ms: 2000,
  claimed: true,
  ttl: 2,
};
const audit: AuditRecord = {
  id: 'a',
  at: '2026-01-01T00:00:00.000000Z',
  action: 'dev_token.create',
  method: 'bearer',
  actor: 'admin',
  dev_token: 'ci',
  study_id: null,
  file_id: null,
  version_id: null,
  source_ip: null,
  user_agent: null,
};

describe('claiming a signed-URL token', () => {
  it('is one conditional update: unclaimed, unexpired and bound to this study, file and version', async () => {
    ddb.on(UpdateCommand).resolves({ Attributes: stored });
    const repo = new DynamoSignedTokenRepository(doc, 'files');
    const claimed = await repo.claim('h', target, 1500, 'claim-1');
    expect(claimed).toMatchObject({ version_id: target.versionId, claimed: true });
    expect(ddb.calls()).toHaveLength(1);
    const input = ddb.commandCalls(UpdateCommand)[0].args[0].input;
    expect(input.Key).toEqual({ pk: 'SIGNED#h', sk: 'TOKEN' });
    expect(input.ConditionExpression).toBe(
      'attribute_exists(pk) AND claimed = :f AND expires_at_ms > :now AND study_id = :s AND file_id = :fi AND version_id = :v',
    );
    expect(input.ExpressionAttributeValues).toMatchObject({
      ':f': false,
      ':now': 1500,
      ':s': target.studyId,
      ':fi': target.fileId,
      ':v': target.versionId,
      ':cid': 'claim-1',
    });
  });

  it('answers null when the condition fails, whatever the reason', async () => {
    ddb.on(UpdateCommand).rejects(new ConditionalCheckFailedException({ message: 'no', $metadata: {} }));
    expect(await new DynamoSignedTokenRepository(doc, 'files').claim('h', target, 1500, 'c')).toBeNull();
  });

  it('lets other failures through (a 500, not a silent 401)', async () => {
    ddb
      .on(UpdateCommand)
      .rejects(Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' }));
    await expect(new DynamoSignedTokenRepository(doc, 'files').claim('h', target, 1500, 'c')).rejects.toThrow(
      'throttled',
    );
  });

  it('releases a claim only if it is still the same claim', async () => {
    ddb.on(UpdateCommand).resolves({});
    await new DynamoSignedTokenRepository(doc, 'files').release('h', 'claim-1');
    const input = ddb.commandCalls(UpdateCommand)[0].args[0].input;
    expect(input.ConditionExpression).toBe('claim_id = :cid');
    expect(input.ExpressionAttributeValues).toMatchObject({ ':cid': 'claim-1', ':f': false });
  });
});

describe('developer tokens in DynamoDB', () => {
  it('writes the name item, the hash item and the audit record in one transaction', async () => {
    ddb.on(TransactWriteCommand).resolves({});
    const record = {
      name: 'ci',
      hint: 'sfdt_abcd',
      created_at: audit.at,
      created_by: 'admin',
      expires_at: null,
      studies: null,
    };
    expect(await new DynamoDevTokenRepository(doc, 'files').create('hash', record, audit)).toBe(true);
    const items = ddb.commandCalls(TransactWriteCommand)[0].args[0].input.TransactItems!;
    expect(items.filter((i) => i.Put).map((i) => (i.Put!.Item as { pk: string }).pk)).toEqual([
      'DEVTOKEN#ci',
      'DEVHASH#hash',
      'AUDIT#-',
    ]);
    // The token list's count and the audit trail's counts move in the same transaction.
    expect(items.filter((i) => i.Update).map((i) => String(i.Update?.Key?.pk).replace(/#\d+$/, ''))).toEqual([
      'CNT#DEVTOKENS',
      'CNT#AUDIT',
      'CNT#AUDIT#USER#admin',
    ]);
    expect(items[0].Put?.ConditionExpression).toBe('attribute_not_exists(pk)');
    expect(JSON.stringify(items)).not.toContain('sfdt_abcdefgh');
  });

  it('reports a taken name as false', async () => {
    ddb.on(TransactWriteCommand).rejects(
      new TransactionCanceledException({
        message: 'cancelled',
        $metadata: {},
        CancellationReasons: [{ Code: 'ConditionalCheckFailed' }, { Code: 'None' }, { Code: 'None' }],
      }),
    );
    const record = {
      name: 'ci',
      hint: 'sfdt_abcd',
      created_at: audit.at,
      created_by: 'admin',
      expires_at: null,
      studies: null,
    };
    expect(await new DynamoDevTokenRepository(doc, 'files').create('hash', record, audit)).toBe(false);
  });

  it('looks a presented secret up with a consistent read, so a deleted token fails at once', async () => {
    ddb.on(GetCommand).resolves({});
    expect(await new DynamoDevTokenRepository(doc, 'files').findByHash('hash')).toBeNull();
    expect(ddb.commandCalls(GetCommand)[0].args[0].input).toMatchObject({
      Key: { pk: 'DEVHASH#hash', sk: 'TOKEN' },
      ConsistentRead: true,
    });
  });
});
