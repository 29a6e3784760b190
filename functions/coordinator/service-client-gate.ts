import { AppError, ForbiddenError } from '../shared/errors.js';
import { log } from '../shared/log.js';
import type * as z from '../shared/zod.js';
import type { ServiceClientProvisioner, ServiceClientRecords } from './ports.js';
import { GATE_SCOPE, type gateRequestSchema } from './service-client-gate-contract.js';

/**
 * The service-client gate: the one function allowed to make and delete the task services' OAuth clients
 * (docs/security.md, One client per service). IAM cannot limit `cognito-idp:CreateUserPoolClient` to a scope, and
 * its answer carries the new client's secret, so whoever holds that grant could make an admin client and read its
 * secret; `DeleteUserPoolClient` reaches every client of the pool, the dashboard's and the coordinator's own. So the
 * grant belongs to this small function alone, which the TaskServices function invokes, and which:
 *
 *   - makes clients of the task services' scope, `coordinator/service`, and of no other (403 otherwise);
 *   - records every client it makes (ServiceClientRecords), and deletes only a client it recorded (403 otherwise);
 *   - replaces the secret of a client it recorded, and of no other (a quarantine: functions/coordinator/
 *     quarantine.ts).
 */

export type GateRequest = z.infer<typeof gateRequestSchema>;

export type GateResult =
  | { clientId: string; clientSecret: string }
  | { deleted: string }
  | { replaced: string; clientSecret: string };

export interface GateDeps {
  /** The identity provider's own client API (Cognito, or the local identity provider). */
  clients: ServiceClientProvisioner;
  records: ServiceClientRecords;
}

export async function runGate(deps: GateDeps, request: GateRequest): Promise<GateResult> {
  if (request.action === 'create') return create(deps, request.name, request.scope);
  if (request.action === 'replace_secret') return replaceSecret(deps, request.clientId);
  return remove(deps, request.clientId);
}

async function create(deps: GateDeps, name: string, scope: string) {
  if (scope !== GATE_SCOPE)
    throw new ForbiddenError(
      `The gate makes clients of the scope ${GATE_SCOPE} only, not ${JSON.stringify(scope)}`,
    );
  const made = await deps.clients.create(name);
  try {
    await deps.records.add(made.clientId, name);
  } catch (err) {
    // Unrecorded, the client could never be deleted through the gate: it is removed again, and the request fails.
    await deps.clients.delete(made.clientId).catch((cause) =>
      log.error('could not delete a client the gate failed to record; delete it by hand', {
        clientId: made.clientId,
        error: cause instanceof Error ? cause.message : String(cause),
      }),
    );
    throw new AppError(
      503,
      'identity_provider_unavailable',
      'The client could not be recorded; nothing was made',
      undefined,
      undefined,
      { cause: err },
    );
  }
  log.info('service client made', { clientId: made.clientId, serviceName: name });
  return made;
}

async function remove(deps: GateDeps, clientId: string) {
  if (!(await deps.records.has(clientId)))
    throw new ForbiddenError(
      `Client ${clientId} was not made by the gate; it deletes only the clients it made`,
    );
  await deps.clients.delete(clientId);
  await deps.records.remove(clientId);
  log.info('service client deleted', { clientId });
  return { deleted: clientId };
}

async function replaceSecret(deps: GateDeps, clientId: string) {
  if (!(await deps.records.has(clientId)))
    throw new ForbiddenError(
      `Client ${clientId} was not made by the gate; it replaces the secret of the clients it made only`,
    );
  const { clientSecret } = await deps.clients.replaceSecret(clientId);
  log.info('service client secret replaced', { clientId });
  return { replaced: clientId, clientSecret };
}
