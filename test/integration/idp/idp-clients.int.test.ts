import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { idpServiceClients } from '#functions/adapters/idp-service-clients.js';
import { createTokenVerifier } from '#functions/shared/auth.js';
import { DEFAULT_CLIENTS } from '#local/idp/clients.js';
import { type Idp, startIdp } from '#local/idp/server.js';

/**
 * The local identity provider's client management (POST /clients, DELETE /clients/<id>, POST /clients/<id>/secret),
 * through the coordinator's
 * own adapter (functions/adapters/idp-service-clients.ts), as `create_client` uses it.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'idp-clients-'));
const started: Idp[] = [];
afterAll(async () => {
  await Promise.all(started.map((i) => i.stop()));
  rmSync(dataDir, { recursive: true, force: true });
});

async function start(issuer?: string) {
  const idp = await startIdp({
    port: 0,
    host: '127.0.0.1',
    dataDir,
    issuer,
    audience: 'release-coordinator',
    clients: DEFAULT_CLIENTS,
  });
  started.push(idp);
  return idp;
}

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const clientCredentials = (idp: Idp, id: string, secret: string) =>
  fetch(idp.tokenUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: id, client_secret: secret }),
  });
const verifier = (idp: Idp) =>
  createTokenVerifier({
    AUTH_ISSUER: idp.issuer,
    AUTH_AUDIENCE: ['release-coordinator'],
    AUTH_ROLES_CLAIMS: ['roles'],
    AUTH_GROUPS_CLAIMS: ['groups'],
    AUTH_ADMIN_ROLE: 'admin',
    AUTH_SERVICE_ROLE: 'service',
    AUTH_GRACE_SECONDS: 0,
  });

describe('clients made by the local identity provider', () => {
  it('makes a service client whose tokens the APIs accept as that client, keeps it across a restart, deletes it', async () => {
    let idp = await start();
    const adapter = () =>
      idpServiceClients({ url: idp.url, adminClientId: 'admin', adminClientSecret: 'admin-local-secret' });
    const made = await adapter().create('stager');
    expect(made.clientId).toMatch(/^ts-[0-9a-f]{16}$/);
    const issued = await clientCredentials(idp, made.clientId, made.clientSecret);
    expect(issued.status).toBe(200);
    const principal = await verifier(idp).verify(
      ((await issued.json()) as { access_token: string }).access_token,
    );
    expect(principal).toMatchObject({ clientId: made.clientId, isService: true, isAdmin: false });
    expect((await clientCredentials(idp, made.clientId, 'wrong')).status).toBe(401);
    // Only a hash of the secret is kept.
    const file = readFileSync(join(dataDir, 'idp', 'clients.json'), 'utf8');
    expect(file).toContain(made.clientId);
    expect(file).not.toContain(made.clientSecret);

    // A restart with the same data dir keeps it, as it keeps the signing key.
    const issuer = idp.issuer;
    await idp.stop();
    idp = await start(issuer);
    expect((await clientCredentials(idp, made.clientId, made.clientSecret)).status).toBe(200);

    await adapter().delete(made.clientId);
    expect((await clientCredentials(idp, made.clientId, made.clientSecret)).status).toBe(401);
    // Deleting it again is not an error for the adapter (404 from the provider).
    await adapter().delete(made.clientId);
  });

  it('takes only an admin client’s HTTP Basic credentials, and never deletes a configured client', async () => {
    const idp = await start();
    const create = (authorization?: string) =>
      fetch(`${idp.url}/clients`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          ...(authorization ? { Authorization: authorization } : {}),
        },
        body: JSON.stringify({ name: 'x' }),
      });
    expect((await create()).status).toBe(401);
    expect((await create(basic('admin', 'wrong'))).status).toBe(401);
    const notAdmin = await create(basic('task-service', 'task-service-local-secret'));
    expect(notAdmin.status).toBe(403);
    const ok = await create(basic('admin', 'admin-local-secret'));
    expect(ok.status).toBe(200);
    const made = (await ok.json()) as { client_id: string };
    expect(made).toMatchObject({ roles: ['service'], name: 'x' });
    // A made client is a client-credentials client: no browser sign-in with it.
    const signIn = await fetch(
      `${idp.url}/authorize?client_id=${made.client_id}&redirect_uri=${encodeURIComponent('http://127.0.0.1:1/cb')}`,
    );
    expect(signIn.status).toBe(400);
    expect(await signIn.text()).toContain('client-credentials client');
    const configured = await fetch(`${idp.url}/clients/task-service`, {
      method: 'DELETE',
      headers: { Authorization: basic('admin', 'admin-local-secret') },
    });
    expect(configured.status).toBe(404);
    expect((await clientCredentials(idp, 'task-service', 'task-service-local-secret')).status).toBe(200);
  });

  it('replaces a made client’s secret: the old one mints no more tokens, the new one does (a quarantine)', async () => {
    const idp = await start();
    const adapter = idpServiceClients({
      url: idp.url,
      adminClientId: 'admin',
      adminClientSecret: 'admin-local-secret',
    });
    const made = await adapter.create('suspect');
    const { clientSecret } = await adapter.replaceSecret(made.clientId);
    expect(clientSecret).not.toBe(made.clientSecret);
    expect((await clientCredentials(idp, made.clientId, made.clientSecret)).status).toBe(401);
    expect((await clientCredentials(idp, made.clientId, clientSecret)).status).toBe(200);
    // Only the admin client may; a configured client has no secret to replace here.
    const asService = await fetch(`${idp.url}/clients/${made.clientId}/secret`, {
      method: 'POST',
      headers: { Authorization: basic('task-service', 'task-service-local-secret') },
      body: '{}',
    });
    expect(asService.status).toBe(403);
    await expect(adapter.replaceSecret('task-service')).rejects.toMatchObject({ status: 503 });
  });

  it('answers the adapter a 503 when the provider refuses it (wrong admin credentials)', async () => {
    const idp = await start();
    const adapter = idpServiceClients({ url: idp.url, adminClientId: 'admin', adminClientSecret: 'nope' });
    await expect(adapter.create('s')).rejects.toMatchObject({
      status: 503,
      code: 'identity_provider_unavailable',
    });
  });
});
