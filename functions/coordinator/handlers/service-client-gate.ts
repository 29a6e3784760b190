import type { Context } from 'aws-lambda';
import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoServiceClientRecords } from '#functions/adapters/dynamodb/service-client-records.js';
import { identityProviderClientsFromEnv } from '#functions/adapters/identity-provider-clients.js';
import { type GateAnswer, gateRequestSchema } from '#functions/coordinator/service-client-gate-contract.js';
import { AppError, isAppError } from '#functions/shared/errors.js';
import { inInvocation, log } from '#functions/shared/log.js';
import { runGate } from '../service-client-gate.js';

/**
 * The service-client gate (functions/coordinator/service-client-gate.ts), invoked by the TaskServices function with
 * Lambda's Invoke (RequestResponse; locally the stack's Lambda endpoint, local/lambda.ts). Not an HTTP handler: its
 * event is a GateRequest, its answer a GateAnswer (service-client-gate-contract.ts). A refusal or an identity
 * provider's failure is an answer (`ok: false`) with the error's status, code and message; anything else is thrown.
 */
const clients = identityProviderClientsFromEnv();
const records = new DynamoServiceClientRecords(documentClient(), tablesFromEnv());

export function handler(event: unknown, context?: Context): Promise<GateAnswer> {
  return inInvocation(context, {}, async (): Promise<GateAnswer> => {
    const parsed = gateRequestSchema.safeParse(event);
    try {
      if (!parsed.success)
        throw new AppError(
          400,
          'validation_error',
          'The gate takes {action: "create", name, scope}, {action: "delete", clientId} or {action: "replace_secret", clientId}',
        );
      if (!clients)
        throw new AppError(
          503,
          'identity_provider_unavailable',
          'The gate has no identity provider to make clients in (TASK_SERVICE_CLIENTS_USER_POOL_ID or TASK_SERVICE_CLIENTS_IDP_URL)',
        );
      return { ok: true as const, ...(await runGate({ clients, records }, parsed.data)) };
    } catch (err) {
      if (!isAppError(err)) throw err;
      log.warn('service client gate refused', { code: err.code, message: err.message });
      return { ok: false as const, error: { status: err.status, code: err.code, message: err.message } };
    }
  });
}
