import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { lambdaClient } from '#functions/adapters/aws.js';
import { serviceClientsFromEnv } from '#functions/adapters/service-clients.js';
import { COORDINATOR_INVOKED_WORKERS } from '#lib/orchestration-manifest.js';
import { localClient } from '#local/dynamodb-local.js';
import { DEFAULT_CLIENTS } from '#local/idp/clients.js';
import { type Idp, startIdp } from '#local/idp/server.js';
import { type LocalLambda, startLocalLambda } from '#local/lambda.js';
import { useLocalTables } from '#test/helpers/tables.js';

/**
 * The service-client gate as `npm start` runs it: the TaskServices function's adapter (TASK_SERVICE_CLIENTS_FUNCTION_NAME)
 * invokes it through the local Lambda endpoint, and it makes the clients at the local identity provider with the
 * provider's admin client, recording them in DynamoDB Local. The same path as on AWS, where Cognito stands in for
 * the provider.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'gate-'));
let idp: Idp;
let lambda: LocalLambda;
let table: string;
const doc = DynamoDBDocumentClient.from(localClient(inject('ddbEndpoint')));

beforeAll(async () => {
  const tables = await useLocalTables();
  table = tables.COORDINATOR_TABLE;
  idp = await startIdp({
    port: 0,
    host: '127.0.0.1',
    dataDir,
    audience: 'release-coordinator',
    clients: DEFAULT_CLIENTS,
  });
  const admin = DEFAULT_CLIENTS.find((c) => c.roles.includes('admin'))!;
  Object.assign(process.env, {
    TASK_SERVICE_CLIENTS_IDP_URL: idp.url,
    TASK_SERVICE_CLIENTS_IDP_CLIENT_ID: admin.client_id,
    TASK_SERVICE_CLIENTS_IDP_CLIENT_SECRET: admin.client_secret,
  });
  lambda = await startLocalLambda({ functions: COORDINATOR_INVOKED_WORKERS });
  Object.assign(process.env, lambda.env);
});
afterAll(async () => {
  await lambda?.stop();
  await idp?.stop();
  doc.destroy();
  rmSync(dataDir, { recursive: true, force: true });
});

const clientCredentials = (id: string, secret: string) =>
  fetch(idp.tokenUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: id, client_secret: secret }),
  });

describe('the service-client gate, locally', () => {
  it('makes a client at the local identity provider through the Lambda endpoint, records it, and deletes it', async () => {
    const clients = serviceClientsFromEnv();
    expect(clients).not.toBeNull();
    const made = await clients!.create('stager');
    expect((await clientCredentials(made.clientId, made.clientSecret)).status).toBe(200);
    const record = await doc.send(
      new GetCommand({ TableName: table, Key: { pk: `SCLIENT#${made.clientId}`, sk: 'SCLIENT' } }),
    );
    expect(record.Item).toMatchObject({ clientId: made.clientId, serviceName: 'stager' });
    await clients!.delete(made.clientId);
    expect((await clientCredentials(made.clientId, made.clientSecret)).status).toBe(401);
    const gone = await doc.send(
      new GetCommand({ TableName: table, Key: { pk: `SCLIENT#${made.clientId}`, sk: 'SCLIENT' } }),
    );
    expect(gone.Item).toBeUndefined();
  });

  it('replaces the secret of a client it made (a quarantine): the old secret mints no more tokens, the new one does', async () => {
    const clients = serviceClientsFromEnv()!;
    const made = await clients.create('reporter');
    const { clientSecret } = await clients.replaceSecret(made.clientId);
    expect(clientSecret).not.toBe(made.clientSecret);
    expect((await clientCredentials(made.clientId, made.clientSecret)).status).toBe(401);
    expect((await clientCredentials(made.clientId, clientSecret)).status).toBe(200);
    await clients.delete(made.clientId);
  });

  it('refuses to delete a client it did not make or replace its secret, and to make a client of another scope', async () => {
    const coordinator = DEFAULT_CLIENTS.find((c) => c.client_id === 'coordinator')!;
    const invoke = async (request: unknown) => {
      const { InvokeCommand } = await import('@aws-sdk/client-lambda');
      const out = await lambdaClient().send(
        new InvokeCommand({
          FunctionName: process.env.TASK_SERVICE_CLIENTS_FUNCTION_NAME,
          Payload: Buffer.from(JSON.stringify(request)),
        }),
      );
      return JSON.parse(Buffer.from(out.Payload!).toString('utf8'));
    };
    expect(await invoke({ action: 'delete', clientId: coordinator.client_id })).toMatchObject({
      ok: false,
      error: { status: 403, code: 'forbidden' },
    });
    expect(await invoke({ action: 'replace_secret', clientId: coordinator.client_id })).toMatchObject({
      ok: false,
      error: { status: 403, code: 'forbidden' },
    });
    await expect(serviceClientsFromEnv()!.delete(coordinator.client_id)).rejects.toMatchObject({
      status: 503,
    });
    // The coordinator's own client still works.
    expect((await clientCredentials(coordinator.client_id, coordinator.client_secret)).status).toBe(200);
    expect(await invoke({ action: 'create', name: 'x', scope: 'coordinator/admin' })).toMatchObject({
      ok: false,
      error: { status: 403 },
    });
  });
});
