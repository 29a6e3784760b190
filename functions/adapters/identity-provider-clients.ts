import { CognitoIdentityProviderClient } from '@aws-sdk/client-cognito-identity-provider';
import type { ServiceClientProvisioner } from '../coordinator/ports.js';
import { GATE_SCOPE } from '../coordinator/service-client-gate-contract.js';
import { parseEnv } from '../shared/config.js';
import * as z from '../shared/zod.js';
import { cognitoServiceClients } from './cognito-service-clients.js';
import { idpServiceClients } from './idp-service-clients.js';

/**
 * Where the gate itself makes the clients, from the env:
 *
 *   TASK_SERVICE_CLIENTS_USER_POOL_ID (+ TASK_SERVICE_CLIENTS_SCOPE)   Cognito app clients (the CDK app sets both)
 *   TASK_SERVICE_CLIENTS_IDP_URL (+ _IDP_CLIENT_ID, _IDP_CLIENT_SECRET) the local identity provider (npm start)
 *
 * Neither: null (the gate then refuses every request).
 */
const env = z.object({
  TASK_SERVICE_CLIENTS_USER_POOL_ID: z.optional(z.string().check(z.minLength(1))),
  // Also the scope the functions take these clients' tokens by (functions/shared/config.ts): empty there turns that
  // off, which leaves nothing to grant here.
  TASK_SERVICE_CLIENTS_SCOPE: z._default(z.string(), 'coordinator/service'),
  TASK_SERVICE_CLIENTS_IDP_URL: z.optional(z.url()),
  TASK_SERVICE_CLIENTS_IDP_CLIENT_ID: z.optional(z.string().check(z.minLength(1))),
  TASK_SERVICE_CLIENTS_IDP_CLIENT_SECRET: z.optional(z.string().check(z.minLength(1))),
});

export function identityProviderClientsFromEnv(
  vars: NodeJS.ProcessEnv = process.env,
): ServiceClientProvisioner | null {
  const c = parseEnv(env, vars);
  if (c.TASK_SERVICE_CLIENTS_USER_POOL_ID && c.TASK_SERVICE_CLIENTS_SCOPE !== GATE_SCOPE)
    throw new Error(
      `Invalid configuration: TASK_SERVICE_CLIENTS_USER_POOL_ID makes clients of the scope ${GATE_SCOPE} only (TASK_SERVICE_CLIENTS_SCOPE)`,
    );
  if (c.TASK_SERVICE_CLIENTS_USER_POOL_ID)
    return cognitoServiceClients(new CognitoIdentityProviderClient({}), {
      userPoolId: c.TASK_SERVICE_CLIENTS_USER_POOL_ID,
      scope: GATE_SCOPE,
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
