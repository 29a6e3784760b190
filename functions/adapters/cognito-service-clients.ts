import {
  AddUserPoolClientSecretCommand,
  type CognitoIdentityProviderClient,
  CreateUserPoolClientCommand,
  type CreateUserPoolClientCommandOutput,
  DeleteUserPoolClientCommand,
  DeleteUserPoolClientSecretCommand,
  ListUserPoolClientSecretsCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import type { ServiceClientProvisioner } from '../coordinator/ports.js';
import { AppError } from '../shared/errors.js';

/**
 * One Cognito app client per task service (the ServiceClientProvisioner port): client credentials only, a generated
 * secret, and the coordinator resource server's `service` scope, so its tokens carry the `service` role and a
 * `client_id` of their own, which the coordinator binds the service to. Its secret is in CreateUserPoolClient's
 * answer and nowhere else the coordinator keeps. The function's role may create and delete clients of this one user
 * pool (lib/auth.ts grants it).
 */
export interface CognitoServiceClientsOptions {
  userPoolId: string;
  /** The scope the client may ask for, e.g. `coordinator/service`. */
  scope: string;
  /** Lifetime of the client's access tokens, minutes (Cognito: 5 to 1,440). */
  accessTokenMinutes?: number;
}

/** Cognito's ClientName: 1 to 128 of `[\w\s+=,.@-]`. */
export function cognitoClientName(serviceName: string): string {
  const cleaned = serviceName.replace(/[^\w\s+=,.@-]/g, '-').trim();
  return `task-service ${cleaned}`.slice(0, 128).trim();
}

const unavailable = (what: string, err: unknown) =>
  new AppError(
    503,
    'identity_provider_unavailable',
    `The identity provider could not ${what}: ${err instanceof Error ? err.name : 'error'}`,
  );

export function cognitoServiceClients(
  cognito: CognitoIdentityProviderClient,
  options: CognitoServiceClientsOptions,
): ServiceClientProvisioner {
  return {
    async create(name) {
      let out: CreateUserPoolClientCommandOutput;
      try {
        out = await cognito.send(
          new CreateUserPoolClientCommand({
            UserPoolId: options.userPoolId,
            ClientName: cognitoClientName(name),
            GenerateSecret: true,
            AllowedOAuthFlowsUserPoolClient: true,
            AllowedOAuthFlows: ['client_credentials'],
            AllowedOAuthScopes: [options.scope],
            // No user sign-in on a machine client (left unset, Cognito would allow SRP and custom auth).
            ExplicitAuthFlows: ['ALLOW_REFRESH_TOKEN_AUTH'],
            AccessTokenValidity: options.accessTokenMinutes ?? 60,
            TokenValidityUnits: { AccessToken: 'minutes' },
            PreventUserExistenceErrors: 'ENABLED',
          }),
        );
      } catch (err) {
        throw unavailable('create a client for the task service', err);
      }
      const client = out.UserPoolClient;
      if (!client?.ClientId || !client.ClientSecret)
        throw unavailable('create a client for the task service', new Error('no client id or secret'));
      return { clientId: client.ClientId, clientSecret: client.ClientSecret };
    },
    async delete(clientId) {
      try {
        await cognito.send(
          new DeleteUserPoolClientCommand({ UserPoolId: options.userPoolId, ClientId: clientId }),
        );
      } catch (err) {
        if ((err as Error)?.name === 'ResourceNotFoundException') return;
        throw unavailable(`delete client ${clientId}`, err);
      }
    },
    /**
     * Cognito keeps at most two secrets per client: the older ones are deleted first when two exist, then one is
     * added, then every other is deleted. Client-credentials tokens have no refresh token, so RevokeToken has nothing
     * to revoke; those already issued expire on their own (accessTokenMinutes) and the coordinator refuses them for
     * a quarantined service meanwhile.
     */
    async replaceSecret(clientId) {
      const ids = { UserPoolId: options.userPoolId, ClientId: clientId };
      try {
        const listed = await cognito.send(new ListUserPoolClientSecretsCommand(ids));
        const old = (listed.ClientSecrets ?? []).flatMap((c) => (c.ClientSecretId ? [c.ClientSecretId] : []));
        const drop = (id: string) =>
          cognito.send(new DeleteUserPoolClientSecretCommand({ ...ids, ClientSecretId: id }));
        // Room for the new one first: the oldest goes when the client holds two.
        if (old.length >= 2) await drop(old[0]);
        const added = await cognito.send(new AddUserPoolClientSecretCommand(ids));
        const secret = added.ClientSecretDescriptor;
        if (!secret?.ClientSecretValue || !secret.ClientSecretId) throw new Error('no secret in the answer');
        for (const id of old.slice(old.length >= 2 ? 1 : 0)) await drop(id);
        return { clientSecret: secret.ClientSecretValue };
      } catch (err) {
        throw unavailable(`replace the secret of client ${clientId}`, err);
      }
    },
  };
}
