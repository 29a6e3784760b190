import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { parseLocalConfig } from '#local/config.js';

const ddb = mockClient(DynamoDBDocumentClient);
afterEach(() => ddb.reset());

describe('IDP_DEV_TOKENS', () => {
  it('distinguishes unset (loopback only) from an explicit true or false', () => {
    expect(parseLocalConfig({}).IDP_DEV_TOKENS).toBeUndefined();
    expect(parseLocalConfig({ IDP_DEV_TOKENS: 'true' }).IDP_DEV_TOKENS).toBe(true);
    expect(parseLocalConfig({ IDP_DEV_TOKENS: 'false' }).IDP_DEV_TOKENS).toBe(false);
  });
});
