import {
  type CognitoIdentityProviderClient,
  CreateUserPoolClientCommand,
  type CreateUserPoolClientCommandOutput,
  DeleteUserPoolClientCommand,
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
  };
}
