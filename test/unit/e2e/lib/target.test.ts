import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { summarize } from '#test/e2e/lib/summary-reporter.js';
import { capabilities, parseE2eEnv, readClientsSecret, resolveClients } from '#test/e2e/lib/target.js';

const ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:e2e-clients-AbCdEf';
const URLS = {
  E2E_COORDINATOR_URL: 'https://coordinator.example/',
  E2E_FILES_URL: 'https://files.example',
  E2E_TOKEN_URL: 'https://auth.example/oauth2/token',
};
const CLIENTS = {
  admin: { client_id: 'admin-id', client_secret: 'admin-secret', scope: 'coordinator/admin' },
  service: { client_id: 'service-id', client_secret: 'service-secret' },
};

describe('end-to-end settings', () => {
  it('is a local run with every capability when no URL is given', () => {
    const env = parseE2eEnv({});
    expect(env.E2E_COORDINATOR_URL).toBeUndefined();
    expect(capabilities(env)).toEqual({
      'task-service': true,
      'local-task-services': true,
      'dev-tokens': true,
    });
  });

  it('takes a deployment by its three URLs (trailing slashes dropped), with no capability unless granted', () => {
    const env = parseE2eEnv(URLS);
    expect(env.E2E_COORDINATOR_URL).toBe('https://coordinator.example');
    expect(capabilities(env)).toEqual({
      'task-service': false,
      'local-task-services': false,
      'dev-tokens': false,
    });
    expect(capabilities(parseE2eEnv({ ...URLS, E2E_TASK_SERVICE_URL: 'https://ts.example' }))).toEqual({
      'task-service': true,
      'local-task-services': false,
      'dev-tokens': false,
    });
    expect(
      capabilities(
        parseE2eEnv({
          ...URLS,
          E2E_TASK_SERVICE_HOST: '127.0.0.1',
          E2E_DEV_TOKENS_URL: 'http://127.0.0.1:1/dev/tokens',
        }),
      ),
    ).toEqual({ 'task-service': true, 'local-task-services': true, 'dev-tokens': true });
  });

  it('refuses part of a target, half a canary, and malformed ids', () => {
    expect(() => parseE2eEnv({ E2E_COORDINATOR_URL: URLS.E2E_COORDINATOR_URL })).toThrow(
      /all of E2E_COORDINATOR_URL, E2E_FILES_URL and E2E_TOKEN_URL, or none/,
    );
    expect(() => parseE2eEnv({ ...URLS, E2E_CANARY_STUDY: 'SD_AAAAAAAA' })).toThrow(/E2E_CANARY_FILE/);
    expect(() => parseE2eEnv({ ...URLS, E2E_CANARY_STUDY: 'study', E2E_CANARY_FILE: 'SF_AAAAAAAA' })).toThrow(
      /E2E_CANARY_STUDY: a study id/,
    );
    expect(() => parseE2eEnv({ E2E_TOKEN_URL: 'not a url' })).toThrow(/E2E_TOKEN_URL/);
  });
});

describe('client credentials', () => {
  const sm = mockClient(SecretsManagerClient);
  afterEach(() => sm.reset());

  it('reads both clients from a Secrets Manager JSON secret', async () => {
    sm.on(GetSecretValueCommand, { SecretId: ARN }).resolves({ SecretString: JSON.stringify(CLIENTS) });
    expect(await readClientsSecret(ARN, new SecretsManagerClient({}))).toEqual(CLIENTS);
  });

  it('names the secret and the missing field, never a value, when the secret is wrong', async () => {
    sm.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify({ admin: CLIENTS.admin }) });
    const missing = readClientsSecret(ARN, new SecretsManagerClient({}));
    await expect(missing).rejects.toThrow(`Secret ${ARN}: service: `);
    await expect(missing).rejects.not.toThrow(/admin-secret/);
    sm.on(GetSecretValueCommand).resolves({ SecretString: 'admin-secret' });
    await expect(readClientsSecret(ARN, new SecretsManagerClient({}))).rejects.toThrow(/is not JSON/);
    sm.on(GetSecretValueCommand).resolves({ SecretBinary: new Uint8Array([1]) });
    await expect(readClientsSecret(ARN, new SecretsManagerClient({}))).rejects.toThrow(/has no SecretString/);
  });

  it('takes the clients from variables, each one overriding the secret field by field', async () => {
    const env = parseE2eEnv({
      ...URLS,
      E2E_CLIENTS_SECRET_ARN: ARN,
      E2E_SERVICE_CLIENT_SECRET: 'rotated',
      E2E_ADMIN_CLIENT_SCOPE: 'coordinator/admin other/scope',
    });
    const read: string[] = [];
    const clients = await resolveClients(env, async (arn) => {
      read.push(arn);
      return CLIENTS;
    });
    expect(read).toEqual([ARN]);
    expect(clients).toEqual({
      admin: { ...CLIENTS.admin, scope: 'coordinator/admin other/scope' },
      service: { client_id: 'service-id', client_secret: 'rotated' },
    });
    const fromVariables = await resolveClients(
      parseE2eEnv({
        ...URLS,
        E2E_ADMIN_CLIENT_ID: 'a',
        E2E_ADMIN_CLIENT_SECRET: 'b',
        E2E_SERVICE_CLIENT_ID: 'c',
        E2E_SERVICE_CLIENT_SECRET: 'd',
      }),
      async () => {
        throw new Error('no secret was named');
      },
    );
    expect(fromVariables).toEqual({
      admin: { client_id: 'a', client_secret: 'b' },
      service: { client_id: 'c', client_secret: 'd' },
    });
  });

  it('says which variables are missing when a client is not given', async () => {
    await expect(resolveClients(parseE2eEnv({ ...URLS, E2E_ADMIN_CLIENT_ID: 'a' }))).rejects.toThrow(
      /No admin client: set E2E_ADMIN_CLIENT_ID and E2E_ADMIN_CLIENT_SECRET, or E2E_CLIENTS_SECRET_ARN/,
    );
  });
});

describe('the closing summary', () => {
  it('counts tests skipped for the target by the capability they need, with its reason, and nothing else', () => {
    const lines = summarize(
      [
        { name: 'a > runs', tags: [], state: 'passed' },
        { name: 'b > fails', tags: ['task-service'], state: 'failed' },
        {
          name: 'c > controls a task service',
          tags: ['local-task-services', 'task-service'],
          state: 'skipped',
        },
        { name: 'd > mints a member', tags: ['dev-tokens'], state: 'skipped' },
        // Left out by a filter, not by the target: it has the capability.
        { name: 'e > filtered', tags: ['task-service'], state: 'skipped' },
        { name: 'f > filtered', tags: [], state: 'skipped' },
      ],
      { 'task-service': true, 'local-task-services': false, 'dev-tokens': false },
      'https://coordinator.example, by URL',
    );
    expect(lines[0]).toBe(
      'e2e summary (https://coordinator.example, by URL): 1 passed, 1 failed, 2 skipped for this target',
    );
    expect(lines.slice(1).map((l) => l.replace(/:.*/, ''))).toEqual([
      '  1 need local-task-services',
      '    - c > controls a task service',
      '  1 need dev-tokens',
      '    - d > mints a member',
    ]);
    expect(lines[1]).toContain('E2E_TASK_SERVICE_HOST');
  });

  it('counts a suite whose hook failed as a failure, even though its tests are only skipped', () => {
    const lines = summarize(
      [{ name: 'a > never ran', tags: [], state: 'skipped' }],
      { 'task-service': true, 'local-task-services': true, 'dev-tokens': true },
      'a local stack',
      ['a'],
    );
    expect(lines).toEqual([
      'e2e summary (a local stack): 0 passed, 1 failed, 0 skipped for this target',
      '  failed outside its tests (a hook): a',
    ]);
  });
});
