import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createTokenVerifier } from '#functions/shared/auth.js';
import { authEnv, parseEnv } from '#functions/shared/config.js';

const ddb = mockClient(DynamoDBDocumentClient);
afterEach(() => ddb.reset());

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
