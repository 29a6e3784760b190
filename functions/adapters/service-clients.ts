import { CognitoIdentityProviderClient } from '@aws-sdk/client-cognito-identity-provider';
import type { ServiceClientProvisioner } from '../coordinator/ports.js';
import { parseEnv } from '../shared/config.js';
import * as z from '../shared/zod.js';
import { cognitoServiceClients } from './cognito-service-clients.js';
import { idpServiceClients } from './idp-service-clients.js';

/**
 * Where `create_client` makes a task service's client, from the env:
 *
 *   TASK_SERVICE_CLIENTS_USER_POOL_ID (+ TASK_SERVICE_CLIENTS_SCOPE)   Cognito app clients (the CDK app sets both)
 *   TASK_SERVICE_CLIENTS_IDP_URL (+ _IDP_CLIENT_ID, _IDP_CLIENT_SECRET) the local identity provider (npm start)
 *
 * Neither: null, and `create_client: true` is a 400 (an external OIDC issuer's clients are made there).
 */
const env = z.object({
  TASK_SERVICE_CLIENTS_USER_POOL_ID: z.optional(z.string().check(z.minLength(1))),
  TASK_SERVICE_CLIENTS_SCOPE: z._default(z.string().check(z.minLength(1)), 'coordinator/service'),
  TASK_SERVICE_CLIENTS_IDP_URL: z.optional(z.url()),
  TASK_SERVICE_CLIENTS_IDP_CLIENT_ID: z.optional(z.string().check(z.minLength(1))),
  TASK_SERVICE_CLIENTS_IDP_CLIENT_SECRET: z.optional(z.string().check(z.minLength(1))),
});

export function serviceClientsFromEnv(
  vars: NodeJS.ProcessEnv = process.env,
): ServiceClientProvisioner | null {
  const c = parseEnv(env, vars);
  if (c.TASK_SERVICE_CLIENTS_USER_POOL_ID)
    return cognitoServiceClients(new CognitoIdentityProviderClient({}), {
      userPoolId: c.TASK_SERVICE_CLIENTS_USER_POOL_ID,
      scope: c.TASK_SERVICE_CLIENTS_SCOPE,
    });
  if (c.TASK_SERVICE_CLIENTS_IDP_URL) {
    if (!c.TASK_SERVICE_CLIENTS_IDP_CLIENT_ID || !c.TASK_SERVICE_CLIENTS_IDP_CLIENT_SECRET)
      throw new Error(
        'Invalid configuration: TASK_SERVICE_CLIENTS_IDP_URL needs TASK_SERVICE_CLIENTS_IDP_CLIENT_ID and TASK_SERVICE_CLIENTS_IDP_CLIENT_SECRET',
      );
    return idpServiceClients({
      url: c.TASK_SERVICE_CLIENTS_IDP_URL,
      adminClientId: c.TASK_SERVICE_CLIENTS_IDP_CLIENT_ID,
      adminClientSecret: c.TASK_SERVICE_CLIENTS_IDP_CLIENT_SECRET,
    });
  }
  return null;
}
