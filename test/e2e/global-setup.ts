import { resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { DEFAULT_CLIENTS } from '#local/idp/clients.js';
import { killGroup, type NpmStart, npmStart } from '../helpers/npm-start.js';
import {
  type Clients,
  capabilities,
  clientToken,
  type E2eTarget,
  parseE2eEnv,
  resolveClients,
} from './lib/target.js';

declare module 'vitest' {
  export interface ProvidedContext {
    e2e: E2eTarget;
  }
}

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * Resolves the target once per run. Without E2E_COORDINATOR_URL: `npm start` on free ports in a fresh DATA_DIR,
 * reached exactly as a deployment would be (its URLs, client credentials at its token endpoint), plus what only a
 * local stack offers (task services on 127.0.0.1, dev tokens). With it: the variables, and the clients from them
 * or from Secrets Manager. Tokens are fetched here, so a wrong secret fails the run at once, with the reason.
 */
export default async function setup(project: TestProject) {
  const env = parseE2eEnv();
  let stack: NpmStart | undefined;
  let base: Omit<E2eTarget, 'tokens' | 'serviceClientId' | 'capabilities'>;
  let clients: Clients;
  const common = {
    study: env.E2E_STUDY,
    releaseTimeoutMs: env.E2E_RELEASE_TIMEOUT_SECONDS * 1000,
    smoke: env.E2E_SMOKE === 'true',
    canary: env.E2E_CANARY_STUDY ? { study: env.E2E_CANARY_STUDY, file: env.E2E_CANARY_FILE! } : undefined,
    taskServiceUrl: env.E2E_TASK_SERVICE_URL,
    taskServiceClientId: env.E2E_TASK_SERVICE_CLIENT_ID,
  };
  if (!env.E2E_COORDINATOR_URL) {
    // The default clients of the local identity provider, whatever IDP_CLIENTS says in this shell.
    stack = await npmStart(ROOT, { IDP_CLIENTS: '', LOG_LEVEL: 'warn' });
    const local = (id: string) => {
      const c = DEFAULT_CLIENTS.find((x) => x.client_id === id)!;
      return { client_id: c.client_id, client_secret: c.client_secret };
    };
    clients = { admin: local('admin'), service: local('task-service') };
    base = {
      ...common,
      mode: 'local',
      coordinatorUrl: stack.urls.coordinator,
      filesUrl: stack.urls.files,
      tokenUrl: `${stack.urls.idp}/oauth/token`,
      taskServiceHost: '127.0.0.1',
      devTokensUrl: `${stack.urls.idp}/dev/tokens`,
    };
  } else {
    clients = await resolveClients(env);
    base = {
      ...common,
      mode: 'remote',
      coordinatorUrl: env.E2E_COORDINATOR_URL,
      filesUrl: env.E2E_FILES_URL!,
      tokenUrl: env.E2E_TOKEN_URL!,
      taskServiceHost: env.E2E_TASK_SERVICE_HOST,
      devTokensUrl: env.E2E_DEV_TOKENS_URL,
    };
  }
  try {
    const [admin, service] = await Promise.all([
      clientToken(base.tokenUrl, clients.admin),
      clientToken(base.tokenUrl, clients.service),
    ]);
    project.provide('e2e', {
      ...base,
      tokens: { admin, service },
      serviceClientId: clients.service.client_id,
      capabilities: capabilities(env),
    });
  } catch (err) {
    if (stack) await killGroup(stack);
    throw err;
  }
  return async () => {
    if (!stack) return;
    const { child } = stack;
    // SIGTERM to the group: the stack stops its parts (DynamoDB Local included) and exits. npm itself exits at once;
    // the stack is gone when the last holder of its output pipe is.
    const closed = new Promise((r) => child.stdout?.once('close', r));
    if (child.pid && child.exitCode === null && child.signalCode === null)
      process.kill(-child.pid, 'SIGTERM');
    await Promise.race([closed, new Promise((r) => setTimeout(r, 25_000).unref())]);
    await killGroup(stack); // whatever is left, then the data dir
  };
}
