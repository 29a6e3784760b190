import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lambdaFromEnv, reportTask, settingsFromEnv } from '#packages/task-service/src/env.js';
import { fileStore } from '#packages/task-service/src/file-store.js';

/** The settings a kit service takes from its environment, with the local stack's defaults. */
describe('settingsFromEnv', () => {
  it('defaults to the local stack: port 4000, jwks at the local identity provider, audience task-services', () => {
    const s = settingsFromEnv({});
    expect(s.listen).toEqual({ port: 4000, host: '127.0.0.1' });
    expect(s.options.auth).toMatchObject({
      mode: 'jwks',
      issuer: 'http://127.0.0.1:3002',
      audience: ['task-services'],
      scope: 'task-services/invoke',
    });
    expect(s.options.signingSecrets).toBeUndefined();
    expect(s.options.callbackToken).toBeUndefined();
    expect(s.notes.join('\n')).toMatch(/signatures are not checked/);
    expect(s.notes.join('\n')).toMatch(/tasks are kept in memory/);
  });

  it('reads every setting by its name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kit-env-'));
    const s = settingsFromEnv({
      PORT: '4100',
      HOST: '0.0.0.0',
      SERVICE_NAME: 'indexer',
      SERVICE_VERSION: '3.1.0',
      COORDINATOR_URL: 'http://127.0.0.1:3000',
      AUTH_ISSUER: 'https://cognito-idp.us-east-1.amazonaws.com/pool',
      AUTH_JWKS_URI: 'https://idp.test/jwks',
      AUTH_AUDIENCE: 'a, b',
      AUTH_CLIENT_ID: 'coordinator-client',
      AUTH_REQUIRED_ROLE: 'service',
      WEBHOOK_SECRET: 'whsec_x',
      TOKEN_URL: 'http://127.0.0.1:3002/oauth/token',
      CLIENT_ID: 'indexer',
      CLIENT_SECRET: 's',
      TASK_STORE_FILE: join(dir, 'tasks.json'),
    });
    expect(s.listen).toEqual({ port: 4100, host: '0.0.0.0' });
    expect(s.options).toMatchObject({
      name: 'indexer',
      version: '3.1.0',
      coordinatorUrl: 'http://127.0.0.1:3000',
    });
    expect(s.options.auth).toEqual({
      mode: 'jwks',
      issuer: 'https://cognito-idp.us-east-1.amazonaws.com/pool',
      jwksUri: 'https://idp.test/jwks',
      audience: ['a', 'b'],
      scope: 'task-services/invoke',
      clientIds: ['coordinator-client'],
      requiredRole: 'service',
    });
    expect(s.options.signingSecrets?.()).toEqual(['whsec_x']);
    expect(typeof s.options.callbackToken).toBe('function');
    expect(s.notes).toEqual([]);
  });

  it('takes AUTH_MODE verify (AUTH_URL) and none, and a fixed CALLBACK_TOKEN', async () => {
    expect(settingsFromEnv({ AUTH_MODE: 'verify', AUTH_URL: 'http://idp.test' }).options.auth).toMatchObject({
      mode: 'verify',
      authUrl: 'http://idp.test',
    });
    expect(settingsFromEnv({ AUTH_MODE: 'none' }).options.auth).toEqual({ mode: 'none' });
    expect(await settingsFromEnv({ CALLBACK_TOKEN: 'fixed' }).options.callbackToken?.()).toBe('fixed');
  });

  it('refuses invalid settings, naming them', () => {
    expect(() => settingsFromEnv({ PORT: 'x' })).toThrow(/PORT/);
    expect(() => settingsFromEnv({ AUTH_MODE: 'maybe' })).toThrow(/AUTH_MODE/);
    expect(() => settingsFromEnv({ TASK_STORE: 'file' })).toThrow(/TASK_STORE_FILE/);
    expect(() => settingsFromEnv({ TASK_STORE: 'dynamodb' })).toThrow(/TASK_TABLE/);
  });
});

describe('settingsFromEnv: secrets, modes and AWS', () => {
  it('reads the signing secrets and the callback client from the secret document (WEBHOOK_SECRET_FILE)', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kit-env-')), 'stager.secret.json');
    writeFileSync(
      file,
      JSON.stringify({ secret: 'whsec_a', client_id: 'made-1', client_secret: 'made-secret' }),
    );
    const asked: string[] = [];
    const idp = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        asked.push(body);
        res.end(JSON.stringify({ access_token: 't', expires_in: 3600 }));
      });
    });
    await new Promise<void>((r) => idp.listen(0, '127.0.0.1', r));
    try {
      const { port } = idp.address() as AddressInfo;
      const s = settingsFromEnv({
        WEBHOOK_SECRET_FILE: file,
        TOKEN_URL: `http://127.0.0.1:${port}/oauth/token`,
      });
      expect(await s.options.signingSecrets?.()).toEqual(['whsec_a']);
      expect(await s.options.callbackToken?.()).toBe('t');
      expect(asked[0]).toMatch(/client_id=made-1&client_secret=made-secret/);
      expect(s.notes.join('\n')).not.toMatch(/signatures are not checked/);
    } finally {
      idp.close();
    }
  });

  it('takes RUN_MODE and WORK_QUEUE_URL, and SWEEP_SECONDS (300 by default)', () => {
    const s = settingsFromEnv({
      RUN_MODE: 'worker',
      WORK_QUEUE_URL: 'https://sqs.test/1/work',
      SWEEP_SECONDS: '0',
    });
    expect(s.options.run).toBe('worker');
    expect(typeof s.options.queue?.send).toBe('function');
    expect(s.sweepSeconds).toBe(0);
    expect(settingsFromEnv({}).sweepSeconds).toBe(300);
    expect(() => settingsFromEnv({ RUN_MODE: 'later' })).toThrow(/RUN_MODE/);
  });

  it('refuses to start on AWS with a local default, naming the setting', () => {
    expect(() => settingsFromEnv({ AWS_LAMBDA_FUNCTION_NAME: 'stager', TASK_TABLE: 't' })).toThrow(
      /invalid settings on AWS: AUTH_ISSUER is unset/,
    );
    expect(() =>
      settingsFromEnv({ AWS_LAMBDA_FUNCTION_NAME: 'stager', AUTH_ISSUER: 'https://auth.test' }),
    ).toThrow(/TASK_TABLE/);
  });

  it('refuses the in-process mode on Lambda, and the worker mode without its queue, at the first event', async () => {
    const work = { start: async () => {}, publish: async () => {} };
    const event = { rawPath: '/status', requestContext: { http: { method: 'GET' } } };
    await expect(async () => lambdaFromEnv(work, { RUN_MODE: 'in-process' })(event)).rejects.toThrow(
      /in-process/,
    );
    await expect(async () => lambdaFromEnv(work, { RUN_MODE: 'worker' })(event)).rejects.toThrow(
      /WORK_QUEUE_URL/,
    );
  });
});

describe('reportTask (an outside job)', () => {
  it('reports through the service’s store, from the same settings', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kit-report-')), 'tasks.json');
    const store = fileStore(file);
    await store.create({
      task_id: 'TA_1',
      release_id: 'RE_1',
      studies: [],
      state: 'running',
      progress: 0,
      date_submitted: new Date().toISOString(),
      handed_off: true,
    });
    const env = { TASK_STORE_FILE: file };
    expect(await reportTask('TA_1', { progress: 30 }, env)).toBe('recorded');
    expect(await reportTask('TA_1', { state: 'staged' }, env)).toBe('recorded');
    expect(await fileStore(file).get('TA_1')).toMatchObject({ state: 'staged', progress: 100 });
  });
});
