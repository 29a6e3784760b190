import type { ServiceClientProvisioner } from '../coordinator/ports.js';
import { parseEnv } from '../shared/config.js';
import * as z from '../shared/zod.js';
import { lambdaClient } from './aws.js';
import { gatedServiceClients } from './gated-service-clients.js';

/**
 * Who makes the task services' clients. The TaskServices function never calls the identity provider's client API
 * itself: `create_client` and the deletion of a service go to the service-client gate, a function of its own that
 * holds the only grant to make and delete clients (functions/coordinator/service-client-gate.ts):
 *
 *   TASK_SERVICE_CLIENTS_FUNCTION_NAME   the gate's function name or ARN (the CDK app sets it with Cognito; the
 *                                        local stack always)
 *
 * Without it: null, and `create_client: true` is a 400 (an external OIDC issuer's clients are made there).
 */
const gateEnv = z.object({
  TASK_SERVICE_CLIENTS_FUNCTION_NAME: z.optional(z.string().check(z.minLength(1))),
});

export function serviceClientsFromEnv(
  vars: NodeJS.ProcessEnv = process.env,
): ServiceClientProvisioner | null {
  const name = parseEnv(gateEnv, vars).TASK_SERVICE_CLIENTS_FUNCTION_NAME;
  return name ? gatedServiceClients(lambdaClient, name) : null;
}
