import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { z } from 'zod';

/**
 * What the end-to-end suite runs against, read once from E2E_* variables. Without E2E_COORDINATOR_URL the suite
 * starts a local stack of its own (test/e2e/global-setup.ts); with it, the suite speaks to that deployment over
 * HTTP only, with client-credentials tokens, and skips what a deployment cannot offer (CAPABILITIES).
 */

/**
 * What some tests need beyond a deployment's public HTTP surface. Each is a vitest tag (test/e2e/vitest.config.ts)
 * that skips its tests when the target lacks it; the text is the reason printed with the skipped count.
 */
export const CAPABILITIES = {
  'task-service':
    'a task service the deployment can reach, to take a release to published: set E2E_TASK_SERVICE_URL ' +
    '(or E2E_TASK_SERVICE_HOST)',
  'local-task-services':
    'fake task services this run starts, controls and watches, which the deployment must be able to call: ' +
    'set E2E_TASK_SERVICE_HOST (the address at which the deployment reaches this machine)',
  'dev-tokens':
    "tokens for any subject and study groups from the local identity provider's POST /dev/tokens, which a " +
    'deployment does not have: set E2E_DEV_TOKENS_URL (local stacks only)',
} as const;
export type Capability = keyof typeof CAPABILITIES;

/** `needs('local-task-services')`: the test options that mark a test (or a describe) as needing those. */
export function needs(...capabilities: Capability[]): { tags: Capability[] } {
  return { tags: capabilities };
}

const url = z
  .string()
  .url()
  .transform((u) => u.replace(/\/+$/, ''));
const studyId = z.string().regex(/^SD_[0-9A-Z]{8}$/, 'a study id, SD_ and 8 characters');

export const e2eEnv = z.object({
  /** The coordinator API's base URL; unset: the suite starts a local stack. */
  E2E_COORDINATOR_URL: url.optional(),
  E2E_FILES_URL: url.optional(),
  /** The OAuth 2.0 token endpoint (client credentials), e.g. Cognito's https://<domain>/oauth2/token. */
  E2E_TOKEN_URL: url.optional(),
  E2E_ADMIN_CLIENT_ID: z.string().min(1).optional(),
  E2E_ADMIN_CLIENT_SECRET: z.string().min(1).optional(),
  E2E_ADMIN_CLIENT_SCOPE: z.string().min(1).optional(),
  E2E_SERVICE_CLIENT_ID: z.string().min(1).optional(),
  E2E_SERVICE_CLIENT_SECRET: z.string().min(1).optional(),
  E2E_SERVICE_CLIENT_SCOPE: z.string().min(1).optional(),
  /** A Secrets Manager secret holding both clients as JSON (CLIENTS_SECRET below); variables above win. */
  E2E_CLIENTS_SECRET_ARN: z.string().startsWith('arn:').optional(),
  /** The study releases and uploads use; default: the first visible one GET /studies lists. */
  E2E_STUDY: studyId.optional(),
  /** A task service the deployment can reach, which stages and publishes whatever it is given. */
  E2E_TASK_SERVICE_URL: url.optional(),
  /**
   * The client E2E_TASK_SERVICE_URL's service reports its progress with: the service is registered bound to it
   * (required where TASK_SERVICE_CLIENT_REQUIRED=true). Unset: registered unbound, so any service token may report.
   */
  E2E_TASK_SERVICE_CLIENT_ID: z.string().min(1).max(256).optional(),
  /** The host at which the deployment reaches servers this run starts (127.0.0.1 for a stack on this machine). */
  E2E_TASK_SERVICE_HOST: z.string().min(1).optional(),
  /** The local identity provider's POST /dev/tokens, when the target is a local stack. */
  E2E_DEV_TOKENS_URL: url.optional(),
  /** The file the smoke run downloads through a signed URL. */
  E2E_CANARY_STUDY: studyId.optional(),
  E2E_CANARY_FILE: z
    .string()
    .regex(/^SF_[0-9A-Z]{8}$/, 'a file id, SF_ and 8 characters')
    .optional(),
  /** How long a release may take to reach staged, and again published (deployments poll less often). */
  E2E_RELEASE_TIMEOUT_SECONDS: z.coerce.number().positive().default(120),
  /** Set by `npm run test:e2e -- --smoke`. */
  E2E_SMOKE: z.enum(['true', 'false']).default('false'),
});
export type E2eEnv = z.infer<typeof e2eEnv>;

export function parseE2eEnv(env: NodeJS.ProcessEnv = process.env): E2eEnv {
  const result = e2eEnv.safeParse(env);
  if (!result.success)
    throw new Error(
      `Invalid end-to-end settings: ${result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const e = result.data;
  const given = (['E2E_COORDINATOR_URL', 'E2E_FILES_URL', 'E2E_TOKEN_URL'] as const).filter((k) => e[k]);
  if (given.length > 0 && given.length < 3)
    throw new Error(
      'Invalid end-to-end settings: set all of E2E_COORDINATOR_URL, E2E_FILES_URL and E2E_TOKEN_URL, or none ' +
        '(none starts a local stack)',
    );
  if (!!e.E2E_CANARY_STUDY !== !!e.E2E_CANARY_FILE)
    throw new Error('Invalid end-to-end settings: set both E2E_CANARY_STUDY and E2E_CANARY_FILE, or neither');
  return e;
}

/** A local stack started by this run has every capability; a target given by URL those its variables grant. */
export function capabilities(e: E2eEnv): Record<Capability, boolean> {
  const local = !e.E2E_COORDINATOR_URL;
  const localTaskServices = local || !!e.E2E_TASK_SERVICE_HOST;
  return {
    'task-service': localTaskServices || !!e.E2E_TASK_SERVICE_URL,
    'local-task-services': localTaskServices,
    'dev-tokens': local || !!e.E2E_DEV_TOKENS_URL,
  };
}

export const clientCredentials = z.object({
  client_id: z.string().min(1),
  client_secret: z.string().min(1),
  /** Cognito grants every scope of the client when none is asked for. */
  scope: z.string().min(1).optional(),
});
export type ClientCredentials = z.infer<typeof clientCredentials>;

/**
 * The two machine clients the suite needs: `admin` (everything; on Cognito the AdminClient, scope coordinator/admin)
 * and `service` (a non-admin token: the 403s, task-service callbacks; on Cognito the TaskServiceClient, scope
 * coordinator/service). Study members are people on Cognito, not machine clients, so member journeys need dev tokens.
 */
export const CLIENTS_SECRET = z.object({ admin: clientCredentials, service: clientCredentials });
export type Clients = z.infer<typeof CLIENTS_SECRET>;

/** Reads E2E_CLIENTS_SECRET_ARN. Errors name the secret and the missing fields, never a value. */
export async function readClientsSecret(
  arn: string,
  client: SecretsManagerClient = new SecretsManagerClient({}),
): Promise<Clients> {
  const out = await client.send(new GetSecretValueCommand({ SecretId: arn }));
  if (out.SecretString === undefined)
    throw new Error(`Secret ${arn} has no SecretString: store the clients as a JSON string`);
  let raw: unknown;
  try {
    raw = JSON.parse(out.SecretString);
  } catch {
    throw new Error(`Secret ${arn} is not JSON: expected {"admin": {...}, "service": {...}}`);
  }
  const parsed = CLIENTS_SECRET.safeParse(raw);
  if (!parsed.success)
    throw new Error(
      `Secret ${arn}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}

/** The clients from the variables, each field falling back to the secret when one is named. */
export async function resolveClients(
  e: E2eEnv,
  readSecret: (arn: string) => Promise<Clients> = (arn) => readClientsSecret(arn),
): Promise<Clients> {
  const fromSecret = e.E2E_CLIENTS_SECRET_ARN ? await readSecret(e.E2E_CLIENTS_SECRET_ARN) : undefined;
  const pick = (who: 'admin' | 'service') => {
    const prefix = who === 'admin' ? 'E2E_ADMIN_CLIENT' : 'E2E_SERVICE_CLIENT';
    const merged = {
      client_id: e[`${prefix}_ID`] ?? fromSecret?.[who].client_id,
      client_secret: e[`${prefix}_SECRET`] ?? fromSecret?.[who].client_secret,
      scope: e[`${prefix}_SCOPE`] ?? fromSecret?.[who].scope,
    };
    const parsed = clientCredentials.safeParse(merged);
    if (!parsed.success)
      throw new Error(
        `No ${who} client: set ${prefix}_ID and ${prefix}_SECRET, or E2E_CLIENTS_SECRET_ARN (a JSON secret ` +
          `{"admin": {"client_id", "client_secret", "scope"?}, "service": {...}})`,
      );
    return parsed.data;
  };
  return { admin: pick('admin'), service: pick('service') };
}

/** Client credentials at the token endpoint (HTTP Basic, as Cognito and the local identity provider take it). */
export async function clientToken(tokenUrl: string, c: ClientCredentials): Promise<string> {
  const basic = Buffer.from(`${encodeURIComponent(c.client_id)}:${encodeURIComponent(c.client_secret)}`);
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    ...(c.scope ? { scope: c.scope } : {}),
  });
  const res = await fetch(tokenUrl, {
    method: 'POST',
    headers: {
      Authorization: `Basic ${basic.toString('base64')}`,
      'Content-Type': 'application/x-www-form-urlencoded',
      Accept: 'application/json',
    },
    body: form.toString(),
  });
  const text = await res.text();
  if (res.status !== 200)
    throw new Error(
      `Token endpoint ${tokenUrl} refused client ${c.client_id}: ${res.status} ${text.slice(0, 300)}`,
    );
  const token = (JSON.parse(text) as { access_token?: unknown }).access_token;
  if (typeof token !== 'string') throw new Error(`Token endpoint ${tokenUrl} answered no access_token`);
  return token;
}

/** What every e2e test file receives (inject('e2e')): URLs, tokens and what the target can do. */
export interface E2eTarget {
  /** local: this run started the stack; remote: given by URL. */
  mode: 'local' | 'remote';
  coordinatorUrl: string;
  filesUrl: string;
  tokenUrl: string;
  tokens: { admin: string; service: string };
  /** The service client's id: the identity its tokens carry (a task service may be bound to it). */
  serviceClientId: string;
  study?: string;
  taskServiceUrl?: string;
  taskServiceClientId?: string;
  taskServiceHost?: string;
  devTokensUrl?: string;
  canary?: { study: string; file: string };
  releaseTimeoutMs: number;
  smoke: boolean;
  capabilities: Record<Capability, boolean>;
}
