import {
  AddUserPoolClientSecretCommand,
  CognitoIdentityProviderClient,
  DeleteUserPoolClientSecretCommand,
  ListUserPoolClientSecretsCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { cognitoServiceClients } from '#functions/adapters/cognito-service-clients.js';

const cognito = mockClient(CognitoIdentityProviderClient);
afterEach(() => cognito.reset());

const clients = () =>
  cognitoServiceClients(new CognitoIdentityProviderClient({ region: 'us-east-1' }), {
    userPoolId: 'us-east-1_Pool',
    scope: 'coordinator/service',
  });
const ids = { UserPoolId: 'us-east-1_Pool', ClientId: 'abc123' };
const deleted = () =>
  cognito.commandCalls(DeleteUserPoolClientSecretCommand).map((c) => c.args[0].input.ClientSecretId);

describe('replacing the secret of a task service’s Cognito client (quarantine, release)', () => {
  it('adds a secret, then deletes every other, and answers the new one', async () => {
    cognito.on(ListUserPoolClientSecretsCommand).resolves({ ClientSecrets: [{ ClientSecretId: 'old-1' }] });
    cognito
      .on(AddUserPoolClientSecretCommand)
      .resolves({ ClientSecretDescriptor: { ClientSecretId: 'new-1', ClientSecretValue: 'fresh' } });
    await expect(clients().replaceSecret('abc123')).resolves.toEqual({ clientSecret: 'fresh' });
    expect(cognito.commandCalls(AddUserPoolClientSecretCommand)[0].args[0].input).toEqual(ids);
    expect(deleted()).toEqual(['old-1']);
  });

  it('makes room first when the client already holds Cognito’s two secrets', async () => {
    cognito
      .on(ListUserPoolClientSecretsCommand)
      .resolves({ ClientSecrets: [{ ClientSecretId: 'old-1' }, { ClientSecretId: 'old-2' }] });
    const order: string[] = [];
    cognito.on(DeleteUserPoolClientSecretCommand).callsFake((input) => {
      order.push(`delete ${input.ClientSecretId}`);
      return {};
    });
    cognito.on(AddUserPoolClientSecretCommand).callsFake(() => {
      order.push('add');
      return { ClientSecretDescriptor: { ClientSecretId: 'new-1', ClientSecretValue: 'fresh' } };
    });
    await clients().replaceSecret('abc123');
    expect(order).toEqual(['delete old-1', 'add', 'delete old-2']);
  });

  it('answers 503 identity_provider_unavailable when Cognito refuses', async () => {
    cognito.on(ListUserPoolClientSecretsCommand).rejects(new Error('AccessDenied'));
    await expect(clients().replaceSecret('abc123')).rejects.toMatchObject({
      status: 503,
      code: 'identity_provider_unavailable',
    });
  });
});
