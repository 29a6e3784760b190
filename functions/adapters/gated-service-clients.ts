import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { ServiceClientProvisioner } from '../coordinator/ports.js';
import {
  GATE_SCOPE,
  type GateAnswer,
  gateAnswerSchema,
} from '../coordinator/service-client-gate-contract.js';
import { AppError } from '../shared/errors.js';
import { log } from '../shared/log.js';

/**
 * The task services' clients, made and deleted by the service-client gate (functions/coordinator/
 * service-client-gate.ts), which holds the only grant to do so (and to replace their secrets): a synchronous Lambda Invoke with the request, its
 * answer checked with zod. Locally the same call reaches the stack's Lambda endpoint (local/lambda.ts, through
 * AWS_ENDPOINT_URL_LAMBDA), which runs the gate in the stack's process against the local identity provider.
 *
 * Anything but a client (a refusal, an identity provider's failure, a gate that failed) is a 503
 * `identity_provider_unavailable`, as the provisioner port says: nothing was made.
 */
export function gatedServiceClients(
  client: () => LambdaClient,
  functionName: string,
): ServiceClientProvisioner {
  const call = async (what: string, request: Record<string, unknown>): Promise<GateAnswer & { ok: true }> => {
    let answer: GateAnswer;
    try {
      const out = await client().send(
        new InvokeCommand({
          FunctionName: functionName,
          InvocationType: 'RequestResponse',
          Payload: Buffer.from(JSON.stringify(request)),
        }),
      );
      const text = out.Payload ? Buffer.from(out.Payload).toString('utf8') : '';
      if (out.FunctionError) throw new Error(`the gate failed (${out.FunctionError}): ${text.slice(0, 500)}`);
      answer = gateAnswerSchema.parse(JSON.parse(text));
    } catch (err) {
      log.error('the service-client gate could not be called', {
        what,
        error: err instanceof Error ? err.message : String(err),
      });
      throw new AppError(
        503,
        'identity_provider_unavailable',
        `The identity provider could not ${what}`,
        undefined,
        undefined,
        {
          cause: err,
        },
      );
    }
    if (!answer.ok)
      throw new AppError(
        503,
        'identity_provider_unavailable',
        `The identity provider could not ${what}: ${answer.error.message}`,
      );
    return answer;
  };
  return {
    async create(name) {
      const out = await call('create a client for the task service', {
        action: 'create',
        name,
        scope: GATE_SCOPE,
      });
      if (!('clientId' in out))
        throw new AppError(503, 'identity_provider_unavailable', 'The gate answered no client');
      return { clientId: out.clientId, clientSecret: out.clientSecret };
    },
    async delete(clientId) {
      await call(`delete client ${clientId}`, { action: 'delete', clientId });
    },
    async replaceSecret(clientId) {
      const out = await call(`replace the secret of client ${clientId}`, {
        action: 'replace_secret',
        clientId,
      });
      if (!('replaced' in out))
        throw new AppError(503, 'identity_provider_unavailable', 'The gate answered no new secret');
      return { clientSecret: out.clientSecret };
    },
  };
}
