/**
 * `npm run rotate:client-secret -- --user-pool <id> --client <id> [--secret-arn <arn>] [--retire]`: a Cognito app
 * client's secret rotated side by side (ops/rotate-client-secret.ts; docs/operations.md, Rotate every secret). AWS
 * credentials and region come from the usual environment.
 */
import { parseArgs } from 'node:util';
import { CognitoIdentityProviderClient } from '@aws-sdk/client-cognito-identity-provider';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { rotateClientSecret } from '#ops/rotate-client-secret.js';

const { values } = parseArgs({
  options: {
    'user-pool': { type: 'string' },
    client: { type: 'string' },
    'secret-arn': { type: 'string' },
    retire: { type: 'boolean' },
  },
});
if (!values['user-pool'] || !values.client)
  throw new Error(
    'usage: npm run rotate:client-secret -- --user-pool <id> --client <id> [--secret-arn <arn>] [--retire]',
  );
const out = await rotateClientSecret(
  new CognitoIdentityProviderClient({}),
  values['secret-arn'] ? new SecretsManagerClient({}) : null,
  {
    userPoolId: values['user-pool'],
    clientId: values.client,
    secretArn: values['secret-arn'],
    retire: values.retire,
  },
);
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
