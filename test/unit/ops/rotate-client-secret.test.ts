import {
  AddUserPoolClientSecretCommand,
  CognitoIdentityProviderClient,
  DeleteUserPoolClientSecretCommand,
  ListUserPoolClientSecretsCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import { PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { rotateClientSecret } from '#ops/rotate-client-secret.js';

const cognito = mockClient(CognitoIdentityProviderClient);
const sm = mockClient(SecretsManagerClient);
afterEach(() => {
  cognito.reset();
  sm.reset();
});
const req = { userPoolId: 'eu-west-1_Pool', clientId: 'coord' };
const client = () => new CognitoIdentityProviderClient({ region: 'eu-west-1' });
const secrets = () => new SecretsManagerClient({ region: 'eu-west-1' });
const at = (d: number) => new Date(Date.UTC(2026, 10, d));

describe('npm run rotate:client-secret', () => {
  it('step 1 adds a secret beside the old one and writes it to the coordinator’s copy in Secrets Manager', async () => {
    cognito.on(ListUserPoolClientSecretsCommand).resolves({
      ClientSecrets: [{ ClientSecretId: 'old', ClientSecretCreateDate: at(1) }],
    });
    cognito
      .on(AddUserPoolClientSecretCommand)
      .resolves({ ClientSecretDescriptor: { ClientSecretId: 'new', ClientSecretValue: 's3cret' } });
    const out = await rotateClientSecret(client(), secrets(), {
      ...req,
      secretArn: 'arn:aws:secretsmanager:x',
    });
    expect(out).toEqual({ clientId: 'coord', clientSecret: 's3cret', secretId: 'new' });
    expect(cognito.commandCalls(DeleteUserPoolClientSecretCommand)).toEqual([]);
    expect(sm.commandCalls(PutSecretValueCommand)[0].args[0].input).toEqual({
      SecretId: 'arn:aws:secretsmanager:x',
      SecretString: 's3cret',
    });
  });

  it('step 2 deletes every secret but the newest', async () => {
    cognito.on(ListUserPoolClientSecretsCommand).resolves({
      ClientSecrets: [
        { ClientSecretId: 'new', ClientSecretCreateDate: at(9) },
        { ClientSecretId: 'old', ClientSecretCreateDate: at(1) },
      ],
    });
    expect(await rotateClientSecret(client(), null, { ...req, retire: true })).toEqual({
      clientId: 'coord',
      retired: 1,
    });
    expect(
      cognito.commandCalls(DeleteUserPoolClientSecretCommand).map((c) => c.args[0].input.ClientSecretId),
    ).toEqual(['old']);
  });

  it('refuses a third secret while a rotation is under way', async () => {
    cognito.on(ListUserPoolClientSecretsCommand).resolves({
      ClientSecrets: [{ ClientSecretId: 'a' }, { ClientSecretId: 'b' }],
    });
    await expect(rotateClientSecret(client(), null, req)).rejects.toThrow(/--retire first/);
    expect(cognito.commandCalls(AddUserPoolClientSecretCommand)).toEqual([]);
  });
});
