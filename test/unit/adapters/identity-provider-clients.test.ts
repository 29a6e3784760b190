import {
  CognitoIdentityProviderClient,
  CreateUserPoolClientCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { identityProviderClientsFromEnv } from '#functions/adapters/identity-provider-clients.js';

const cognito = mockClient(CognitoIdentityProviderClient);
afterEach(() => cognito.reset());

describe('where the service-client gate makes the clients', () => {
  it('Cognito with TASK_SERVICE_CLIENTS_USER_POOL_ID, the local provider with TASK_SERVICE_CLIENTS_IDP_URL, else none', async () => {
    expect(identityProviderClientsFromEnv({})).toBeNull();
    cognito
      .on(CreateUserPoolClientCommand)
      .resolves({ UserPoolClient: { ClientId: 'c', ClientSecret: 's' } });
    const viaCognito = identityProviderClientsFromEnv({
      TASK_SERVICE_CLIENTS_USER_POOL_ID: 'us-east-1_P',
      AWS_REGION: 'us-east-1',
    });
    expect(await viaCognito?.create('x')).toEqual({ clientId: 'c', clientSecret: 's' });
    expect(cognito.commandCalls(CreateUserPoolClientCommand)[0].args[0].input).toMatchObject({
      UserPoolId: 'us-east-1_P',
      AllowedOAuthScopes: ['coordinator/service'],
    });
    expect(() =>
      identityProviderClientsFromEnv({ TASK_SERVICE_CLIENTS_IDP_URL: 'http://127.0.0.1:1' }),
    ).toThrow(/TASK_SERVICE_CLIENTS_IDP_CLIENT_ID/);
    expect(
      identityProviderClientsFromEnv({
        TASK_SERVICE_CLIENTS_IDP_URL: 'http://127.0.0.1:1',
        TASK_SERVICE_CLIENTS_IDP_CLIENT_ID: 'admin',
        TASK_SERVICE_CLIENTS_IDP_CLIENT_SECRET: 'x',
      }),
    ).not.toBeNull();
  });

  it('makes Cognito clients of the scope coordinator/service only, whatever TASK_SERVICE_CLIENTS_SCOPE says', () => {
    expect(() =>
      identityProviderClientsFromEnv({
        TASK_SERVICE_CLIENTS_USER_POOL_ID: 'us-east-1_P',
        TASK_SERVICE_CLIENTS_SCOPE: 'coordinator/admin',
      }),
    ).toThrow(/coordinator\/service only/);
  });
});
