import type { LocalConfig } from '../config.js';
import { publicHost } from '../config.js';
import { type IdpClient, parseClients } from '../idp/clients.js';
import { type Idp, startIdp } from '../idp/server.js';
import type { LocalStack } from './stack.js';

/** The identity provider's clients, and the two the stack itself uses. */
export interface StackClients {
  clients: IdpClient[];
  /** The coordinator's own client: its calls to task services. */
  coordinator: IdpClient;
  /** A client with the admin role, which makes the task services' own clients; none: `create_client` is off. */
  admin: IdpClient | undefined;
}

/** IDP_CLIENTS checked against the settings that name its clients, before anything starts. */
export function stackClients(config: LocalConfig): StackClients {
  // The coordinator's own client gets tokens for the task services' audience only, so a task service that replays
  // the token it received against the coordinator is refused (the APIs accept AUTH_AUDIENCE alone).
  const clients = parseClients(config.IDP_CLIENTS).map((c) =>
    c.client_id === config.COORDINATOR_CLIENT_ID
      ? { ...c, audience: c.audience ?? config.TASK_SERVICE_AUDIENCE }
      : c,
  );
  const coordinator = clients.find((c) => c.client_id === config.COORDINATOR_CLIENT_ID);
  if (!coordinator)
    throw new Error(
      `Invalid configuration: COORDINATOR_CLIENT_ID "${config.COORDINATOR_CLIENT_ID}" is not in IDP_CLIENTS`,
    );
  const admin = clients.find((c) => c.roles.includes('admin'));
  if (coordinator.audience === config.AUTH_AUDIENCE)
    throw new Error(
      "Invalid configuration: the coordinator client's audience must differ from AUTH_AUDIENCE, or its token would work against the coordinator",
    );
  return { clients, coordinator, admin };
}

/** The identity provider: the coordinator verifies its tokens and uses its client credentials. */
export async function startIdentityProvider(
  stack: LocalStack,
  config: LocalConfig,
  clients: StackClients,
  dashboard: { url: string; corsOrigins: string[] },
): Promise<Idp> {
  const idp = await startIdp({
    port: config.IDP_PORT,
    host: config.HOST,
    dataDir: config.DATA_DIR,
    issuer: config.IDP_ISSUER,
    audience: config.AUTH_AUDIENCE,
    clients: clients.clients,
    verifyAudience: clients.coordinator.audience,
    tokenTtlSeconds: config.IDP_TOKEN_TTL_SECONDS,
    devTokens: config.IDP_DEV_TOKENS,
    corsOrigins: dashboard.corsOrigins,
    redirectUris: [`${dashboard.url}/`],
  });
  const { admin } = clients;
  stack.use({
    name: 'identity provider',
    env: {
      AUTH_ISSUER: idp.issuer,
      AUTH_AUDIENCE: idp.audience,
      AUTH_JWKS_URI: idp.jwksUri,
      AUTH_URL: idp.url,
      COORDINATOR_TOKEN_URL: idp.tokenUrl,
      COORDINATOR_CLIENT_ID: clients.coordinator.client_id,
      COORDINATOR_CLIENT_SECRET: clients.coordinator.client_secret,
      // The service-client gate (bin/local.ts runs it) makes each task service its own client here, with an admin
      // client's credentials (as the deployed gate makes Cognito app clients with its IAM role). Without an admin
      // client: no gate, and `create_client` is not offered.
      ...(admin
        ? {
            TASK_SERVICE_CLIENTS_IDP_URL: idp.url,
            TASK_SERVICE_CLIENTS_IDP_CLIENT_ID: admin.client_id,
            TASK_SERVICE_CLIENTS_IDP_CLIENT_SECRET: admin.client_secret,
          }
        : {}),
    },
    urls: { 'Identity provider': `http://${publicHost(config.HOST)}:${new URL(idp.url).port}` },
    stop: idp.stop,
  });
  return idp;
}
