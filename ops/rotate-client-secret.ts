import {
  AddUserPoolClientSecretCommand,
  type CognitoIdentityProviderClient,
  DeleteUserPoolClientSecretCommand,
  ListUserPoolClientSecretsCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import { PutSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

/**
 * `npm run rotate:client-secret -- --user-pool <id> --client <id> [--secret-arn <arn>] [--retire]`: rotates the
 * secret of any Cognito app client in two steps, the old and the new side by side in between (Cognito keeps two per
 * client): the admin client, the shared TaskServiceClient, a task service's own client and the coordinator's
 * (docs/operations.md, Rotate every secret).
 *
 * 1. Without `--retire`: adds a new secret and prints it. Both work now; give the new one to whoever uses the client
 *    (with `--secret-arn`, it is also written to that Secrets Manager secret: the coordinator's own copy, which its
 *    functions read at cold start).
 * 2. With `--retire`, once every user has the new one: deletes every secret but the newest.
 */
export interface Rotation {
  clientId: string;
  /** Step 1: the new secret (shown this once). */
  clientSecret?: string;
  secretId?: string;
  /** Step 2: how many old secrets were deleted. */
  retired?: number;
}

export async function rotateClientSecret(
  cognito: CognitoIdentityProviderClient,
  secrets: SecretsManagerClient | null,
  req: { userPoolId: string; clientId: string; secretArn?: string; retire?: boolean },
): Promise<Rotation> {
  const ids = { UserPoolId: req.userPoolId, ClientId: req.clientId };
  const listed = await cognito.send(new ListUserPoolClientSecretsCommand(ids));
  const current = [...(listed.ClientSecrets ?? [])].sort(
    (a, b) => (a.ClientSecretCreateDate?.getTime() ?? 0) - (b.ClientSecretCreateDate?.getTime() ?? 0),
  );
  if (req.retire) {
    const old = current.slice(0, -1).flatMap((c) => (c.ClientSecretId ? [c.ClientSecretId] : []));
    for (const id of old)
      await cognito.send(new DeleteUserPoolClientSecretCommand({ ...ids, ClientSecretId: id }));
    return { clientId: req.clientId, retired: old.length };
  }
  if (current.length >= 2)
    throw new Error(
      `client ${req.clientId} already has two secrets (a rotation under way): finish it with --retire first`,
    );
  const added = await cognito.send(new AddUserPoolClientSecretCommand(ids));
  const value = added.ClientSecretDescriptor?.ClientSecretValue;
  if (!value) throw new Error('Cognito answered no secret');
  if (req.secretArn) {
    if (!secrets) throw new Error('--secret-arn needs Secrets Manager');
    await secrets.send(new PutSecretValueCommand({ SecretId: req.secretArn, SecretString: value }));
  }
  return {
    clientId: req.clientId,
    clientSecret: value,
    secretId: added.ClientSecretDescriptor?.ClientSecretId,
  };
}
