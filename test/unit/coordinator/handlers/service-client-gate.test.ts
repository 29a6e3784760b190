import {
  CognitoIdentityProviderClient,
  CreateUserPoolClientCommand,
  DeleteUserPoolClientCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import { DeleteCommand, DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

/**
 * The service-client gate's Lambda handler on AWS, over a mocked Cognito and DynamoDB: what it asks Cognito for,
 * what it records, and what it refuses before calling Cognito at all.
 */
const cognito = mockClient(CognitoIdentityProviderClient);
const ddb = mockClient(DynamoDBDocumentClient);
let handler: (event: unknown) => Promise<unknown>;

beforeAll(async () => {
  Object.assign(process.env, {
    COORDINATOR_TABLE: 'unit-Coordinator',
    STUDIES_TABLE: 'unit-Studies',
    TASK_SERVICE_CLIENTS_USER_POOL_ID: 'us-east-1_Pool',
    AWS_REGION: 'us-east-1',
  });
  handler = (await import('#functions/coordinator/handlers/service-client-gate.js')).handler;
});
afterAll(() => {
  delete process.env.TASK_SERVICE_CLIENTS_USER_POOL_ID;
  cognito.restore();
  ddb.restore();
});
beforeEach(() => {
  cognito.reset();
  ddb.reset();
});

describe('the service-client gate function', () => {
  it('makes a Cognito client of the scope coordinator/service, records it under its own key, and answers its secret', async () => {
    cognito
      .on(CreateUserPoolClientCommand)
      .resolves({ UserPoolClient: { ClientId: 'abc', ClientSecret: 's' } });
    ddb.on(PutCommand).resolves({});
    expect(await handler({ action: 'create', name: 'stager', scope: 'coordinator/service' })).toEqual({
      ok: true,
      clientId: 'abc',
      clientSecret: 's',
    });
    expect(cognito.commandCalls(CreateUserPoolClientCommand)[0].args[0].input).toMatchObject({
      UserPoolId: 'us-east-1_Pool',
      AllowedOAuthScopes: ['coordinator/service'],
      AllowedOAuthFlows: ['client_credentials'],
    });
    expect(ddb.commandCalls(PutCommand)[0].args[0].input).toMatchObject({
      TableName: 'unit-Coordinator',
      Item: { pk: 'SCLIENT#abc', sk: 'SCLIENT', clientId: 'abc', serviceName: 'stager' },
    });
  });

  it('refuses a coordinator/admin client with 403 before calling Cognito', async () => {
    expect(await handler({ action: 'create', name: 'x', scope: 'coordinator/admin' })).toMatchObject({
      ok: false,
      error: { status: 403, code: 'forbidden' },
    });
    expect(cognito.calls()).toHaveLength(0);
  });

  it('deletes a client it recorded, and refuses with 403 one it did not make, without calling Cognito', async () => {
    ddb
      .on(GetCommand, { Key: { pk: 'SCLIENT#abc', sk: 'SCLIENT' } })
      .resolves({ Item: { pk: 'SCLIENT#abc' } });
    ddb.on(GetCommand, { Key: { pk: 'SCLIENT#dashboard-client', sk: 'SCLIENT' } }).resolves({});
    ddb.on(DeleteCommand).resolves({});
    cognito.on(DeleteUserPoolClientCommand).resolves({});
    expect(await handler({ action: 'delete', clientId: 'dashboard-client' })).toMatchObject({
      ok: false,
      error: { status: 403 },
    });
    expect(cognito.calls()).toHaveLength(0);
    expect(await handler({ action: 'delete', clientId: 'abc' })).toEqual({ ok: true, deleted: 'abc' });
    expect(cognito.commandCalls(DeleteUserPoolClientCommand)[0].args[0].input).toEqual({
      UserPoolId: 'us-east-1_Pool',
      ClientId: 'abc',
    });
    expect(ddb.commandCalls(DeleteCommand)[0].args[0].input.Key).toEqual({
      pk: 'SCLIENT#abc',
      sk: 'SCLIENT',
    });
  });

  it('answers a malformed request 400, calling nothing', async () => {
    for (const event of [{}, { action: 'create', name: 'x' }, { action: 'rotate', clientId: 'abc' }, null])
      expect(await handler(event)).toMatchObject({ ok: false, error: { status: 400 } });
    expect(cognito.calls()).toHaveLength(0);
    expect(ddb.calls()).toHaveLength(0);
  });
});
