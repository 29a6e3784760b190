import {
  CognitoIdentityProviderClient,
  CreateUserPoolClientCommand,
  DeleteUserPoolClientCommand,
  ResourceNotFoundException,
} from '@aws-sdk/client-cognito-identity-provider';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { cognitoClientName, cognitoServiceClients } from '#functions/adapters/cognito-service-clients.js';
import { serviceClientsFromEnv } from '#functions/adapters/service-clients.js';

const cognito = mockClient(CognitoIdentityProviderClient);
afterEach(() => cognito.reset());

const clients = () =>
  cognitoServiceClients(new CognitoIdentityProviderClient({ region: 'us-east-1' }), {
    userPoolId: 'us-east-1_Pool',
    scope: 'coordinator/service',
  });

describe('Cognito app clients for task services', () => {
  it('creates a client-credentials client with a secret and the service scope only, and answers its id and secret', async () => {
    cognito.on(CreateUserPoolClientCommand).resolves({
      UserPoolClient: { ClientId: 'abc123', ClientSecret: 's3cret', UserPoolId: 'us-east-1_Pool' },
    });
    const out = await clients().create('stager (v2)');
    expect(out).toEqual({ clientId: 'abc123', clientSecret: 's3cret' });
    const sent = cognito.commandCalls(CreateUserPoolClientCommand)[0].args[0].input;
    expect(sent).toEqual({
      UserPoolId: 'us-east-1_Pool',
      ClientName: 'task-service stager -v2-',
      GenerateSecret: true,
      AllowedOAuthFlowsUserPoolClient: true,
      AllowedOAuthFlows: ['client_credentials'],
      AllowedOAuthScopes: ['coordinator/service'],
      ExplicitAuthFlows: ['ALLOW_REFRESH_TOKEN_AUTH'],
      AccessTokenValidity: 60,
      TokenValidityUnits: { AccessToken: 'minutes' },
      PreventUserExistenceErrors: 'ENABLED',
    });
  });

  it('keeps client names within Cognito’s alphabet and 128 characters', () => {
    expect(cognitoClientName('a/b#c')).toBe('task-service a-b-c');
    expect(cognitoClientName('x'.repeat(300))).toHaveLength(128);
    expect(cognitoClientName('ünï')).toMatch(/^task-service [\w\s+=,.@-]*$/);
  });

  it('answers 503 identity_provider_unavailable when Cognito refuses or answers no secret', async () => {
    cognito
      .on(CreateUserPoolClientCommand)
      .rejects(Object.assign(new Error('no'), { name: 'LimitExceededException' }));
    await expect(clients().create('s')).rejects.toMatchObject({
      status: 503,
      code: 'identity_provider_unavailable',
    });
    cognito.on(CreateUserPoolClientCommand).resolves({ UserPoolClient: { ClientId: 'abc' } });
    await expect(clients().create('s')).rejects.toMatchObject({ status: 503 });
  });

  it('deletes a client of its pool; one already gone is not an error', async () => {
    cognito
      .on(DeleteUserPoolClientCommand)
      .resolvesOnce({})
      .rejectsOnce(new ResourceNotFoundException({ message: 'gone', $metadata: {} }));
    await clients().delete('abc123');
    await clients().delete('abc123');
    expect(cognito.commandCalls(DeleteUserPoolClientCommand).map((c) => c.args[0].input)).toEqual([
      { UserPoolId: 'us-east-1_Pool', ClientId: 'abc123' },
      { UserPoolId: 'us-east-1_Pool', ClientId: 'abc123' },
    ]);
    cognito
      .on(DeleteUserPoolClientCommand)
      .rejects(Object.assign(new Error('x'), { name: 'InternalErrorException' }));
    await expect(clients().delete('abc123')).rejects.toMatchObject({ status: 503 });
  });
});

describe('who makes the clients for the TaskServices function', () => {
  it('the service-client gate with TASK_SERVICE_CLIENTS_FUNCTION_NAME, never the identity provider itself; else none', () => {
    expect(serviceClientsFromEnv({})).toBeNull();
    // The identity provider's own settings are the gate's: the TaskServices function does not call it directly.
    expect(
      serviceClientsFromEnv({ TASK_SERVICE_CLIENTS_USER_POOL_ID: 'us-east-1_P', AWS_REGION: 'us-east-1' }),
    ).toBeNull();
    expect(serviceClientsFromEnv({ TASK_SERVICE_CLIENTS_FUNCTION_NAME: 'ServiceClientGate' })).not.toBeNull();
  });
});
