import { createServer, type Server } from 'node:http';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventRoutes } from '#functions/coordinator/contracts/events.js';
import { taskRoutes } from '#functions/coordinator/contracts/tasks.js';
import { createEvent } from '#functions/coordinator/events.js';
import { requireActsFor } from '#functions/coordinator/identity.js';
import { type AuthConfig, createTokenVerifier, type TokenVerifier } from '#functions/shared/auth.js';
import { authEnv, parseEnv } from '#functions/shared/config.js';
import { httpApp } from '#functions/shared/http/app.js';
import { actorOf } from '#functions/shared/http/authentication.js';
import { ok } from '#functions/shared/http/response.js';
import * as z from '#functions/shared/zod.js';
import { generateSigningKey, jwks, signJwt } from '#local/jwt.js';

/**
 * A task service's own Cognito app client (made when the service is registered) is in no audience list: its access
 * token has no `aud`, and its `client_id` is not in AUTH_AUDIENCE. The task-service callbacks (PATCH /tasks/{id},
 * POST /events) take it by issuer, keys, expiry, `token_use` and the task services' scope; every other route, and
 * every other token, is judged as before. The keys are served over loopback HTTP, as Cognito's JWKS is.
 */
const key = generateSigningKey();
const otherKey = generateSigningKey();
let server: Server;
let issuer: string;
let verifier: TokenVerifier;

const LISTED = 'shared-task-service-client';
const ADMIN_CLIENT = 'admin-client';
const config = (extra: Partial<AuthConfig> = {}): AuthConfig => ({
  AUTH_ISSUER: issuer,
  AUTH_AUDIENCE: [LISTED, ADMIN_CLIENT],
  AUTH_ROLES_CLAIMS: ['roles', 'cognito:groups', 'scope'],
  AUTH_GROUPS_CLAIMS: ['groups', 'cognito:groups'],
  AUTH_ADMIN_ROLE: 'admin',
  AUTH_SERVICE_ROLE: 'service',
  AUTH_GRACE_SECONDS: 0,
  ...extra,
});

beforeAll(async () => {
  server = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(jwks(key)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  verifier = createTokenVerifier(config());
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** A Cognito client-credentials access token: no aud, client_id, token_use access, the client's scopes. */
const cognitoAccess = (clientId: string, scope: string, extra: Record<string, unknown> = {}) => ({
  iss: issuer,
  sub: clientId,
  client_id: clientId,
  token_use: 'access',
  scope,
  ...extra,
});
const perService = (extra: Record<string, unknown> = {}) =>
  signJwt(key, cognitoAccess('per-service-client-1', 'coordinator/service', extra));

describe('the token of a task service’s own app client', () => {
  it('is refused by the audience rule, and accepted as a service bound to its client id by verifyServiceClient', async () => {
    await expect(verifier.verify(perService())).rejects.toMatchObject({ status: 401 });
    const p = await verifier.verifyServiceClient?.(perService());
    expect(p).toMatchObject({
      kind: 'user',
      clientId: 'per-service-client-1',
      isService: true,
      isAdmin: false,
      boundClientOnly: true,
      groups: [],
    });
  });

  it('never makes an admin or a study member, whatever else the token says', async () => {
    const p = await verifier.verifyServiceClient?.(
      perService({ scope: 'coordinator/service coordinator/admin', 'cognito:groups': ['admin', 'SD_1'] }),
    );
    expect(p).toMatchObject({ isAdmin: false, isService: true, groups: [], roles: ['service'] });
  });

  it.each([
    ['without the task services’ scope', () => perService({ scope: 'coordinator/read' })],
    ['with only the admin scope', () => signJwt(key, cognitoAccess('unlisted-admin', 'coordinator/admin'))],
    ['with an aud (the audience rule alone decides)', () => perService({ aud: 'someone-else' })],
    ['that is an ID token', () => perService({ token_use: 'id' })],
    ['without token_use', () => perService({ token_use: undefined })],
    ['without client_id', () => perService({ client_id: undefined })],
    ['from another issuer', () => perService({ iss: 'https://cognito-idp.example/other-pool' })],
    ['expired', () => perService({ exp: Math.floor(Date.now() / 1000) - 2 })],
    [
      'signed by another key',
      () => signJwt({ ...otherKey, kid: key.kid }, cognitoAccess('x', 'coordinator/service')),
    ],
    [
      'the coordinator’s own (task services’ invoke scope)',
      () => signJwt(key, cognitoAccess('coord', 'task-services/invoke')),
    ],
  ])('is refused %s', async (_, make) => {
    await expect(verifier.verifyServiceClient?.(make())).rejects.toMatchObject({ status: 401 });
  });

  it('takes the scope from TASK_SERVICE_CLIENTS_SCOPE (default coordinator/service); empty turns it off', async () => {
    const env = { AUTH_ISSUER: 'https://issuer.example', AUTH_AUDIENCE: 'a' };
    const schema = z.object(authEnv);
    expect(parseEnv(schema, env).TASK_SERVICE_CLIENTS_SCOPE).toBe('coordinator/service');
    expect(parseEnv(schema, { ...env, TASK_SERVICE_CLIENTS_SCOPE: '' }).TASK_SERVICE_CLIENTS_SCOPE).toBe('');
    expect(() => parseEnv(schema, { ...env, TASK_SERVICE_CLIENTS_SCOPE: 'a b' })).toThrow(
      /TASK_SERVICE_CLIENTS_SCOPE/,
    );
    expect(
      createTokenVerifier(config({ TASK_SERVICE_CLIENTS_SCOPE: '' })).verifyServiceClient,
    ).toBeUndefined();
    const custom = createTokenVerifier(config({ TASK_SERVICE_CLIENTS_SCOPE: 'tasks/report' }));
    await expect(custom.verifyServiceClient?.(perService())).rejects.toMatchObject({ status: 401 });
    expect(
      await custom.verifyServiceClient?.(signJwt(key, cognitoAccess('c2', 'tasks/report'))),
    ).toMatchObject({ clientId: 'c2', isService: true });
  });
});

describe('the routes that take it', () => {
  it('are exactly the task-service callbacks PATCH /tasks/{id} and POST /events, and the reads of tasks', () => {
    const flagged = [...Object.values(taskRoutes), ...Object.values(eventRoutes)]
      .filter((c) => 'serviceClients' in c && c.serviceClients)
      .map((c) => `${c.method} ${c.path}`);
    expect(flagged).toEqual(['GET /tasks', 'GET /tasks/{id}', 'PATCH /tasks/{id}', 'POST /events']);
  });

  // The real contracts, behind the real HTTP chain and verifier; the handlers echo who they were called by.
  const echo = async (req: Parameters<typeof actorOf>[0]) => ok(actorOf(req));
  let app: ReturnType<typeof httpApp>;
  beforeAll(() => {
    app = httpApp({
      verifier,
      routes: [
        { ...taskRoutes.getTask, handle: echo },
        { ...taskRoutes.reportTask, handle: echo },
        { ...eventRoutes.createEvent, idempotent: undefined, handle: echo },
        { ...eventRoutes.deleteEvent, handle: echo },
      ],
    });
  });
  async function call(method: string, path: string, token: string) {
    const event = {
      rawPath: path,
      rawQueryString: '',
      headers: { host: 'api.example.com', authorization: `Bearer ${token}` },
      requestContext: { http: { method }, domainName: 'api.example.com', requestId: 'r1' },
      body: method === 'GET' || method === 'DELETE' ? undefined : '{}',
      isBase64Encoded: false,
    } as unknown as APIGatewayProxyEventV2;
    const res = (await app(event, {} as Context)) as { statusCode: number; body: string };
    return { status: res.statusCode, body: JSON.parse(res.body || 'null') };
  }

  it('take a per-service client’s token, as that client only', async () => {
    for (const [method, path] of [
      ['GET', '/tasks/TA_00000001'],
      ['PATCH', '/tasks/TA_00000001'],
      ['POST', '/events'],
    ]) {
      const res = await call(method, path, perService());
      expect(res, `${method} ${path}`).toMatchObject({
        status: 200,
        body: { isAdmin: false, identity: 'per-service-client-1', boundClientOnly: true },
      });
    }
  });

  it('judge every other token as before: a listed service or admin passes, an unlisted admin or a token without the scope does not', async () => {
    const listed = signJwt(key, cognitoAccess(LISTED, 'coordinator/service'));
    expect(await call('PATCH', '/tasks/TA_00000001', listed)).toMatchObject({
      status: 200,
      body: { identity: LISTED, isAdmin: false },
    });
    expect((await call('PATCH', '/tasks/TA_00000001', listed)).body.boundClientOnly).toBeUndefined();
    const admin = signJwt(key, cognitoAccess(ADMIN_CLIENT, 'coordinator/admin'));
    expect(await call('POST', '/events', admin)).toMatchObject({ status: 200, body: { isAdmin: true } });
    for (const token of [
      signJwt(key, cognitoAccess('unlisted-admin', 'coordinator/admin')),
      perService({ scope: 'coordinator/read' }),
      perService({ aud: 'someone-else' }),
    ]) {
      expect((await call('PATCH', '/tasks/TA_00000001', token)).status).toBe(401);
      expect((await call('POST', '/events', token)).status).toBe(401);
    }
  });

  it('and no other route does: the same token is a 401 on DELETE /events/{id}', async () => {
    expect((await call('DELETE', '/events/EV_00000001', perService())).status).toBe(401);
  });
});

describe('a per-service client writes about its own task service only', () => {
  const services = new Map([
    ['TS_BOUND', { id: 'TS_BOUND', clientId: 'per-service-client-1' }],
    ['TS_OTHER', { id: 'TS_OTHER', clientId: 'per-service-client-2' }],
    ['TS_UNBOUND', { id: 'TS_UNBOUND', clientId: null }],
  ]);
  const deps = { taskServices: { get: async (id: string) => (services.get(id) ?? null) as never } };
  const own = { isAdmin: false, identity: 'per-service-client-1', boundClientOnly: true };

  it('its own service passes; another’s, an unbound one and an unknown one are a 403', async () => {
    await expect(requireActsFor(deps, own, 'TS_BOUND', 'Task TA_1')).resolves.toBeUndefined();
    for (const id of ['TS_OTHER', 'TS_UNBOUND', 'TS_GONE'])
      await expect(requireActsFor(deps, own, id, 'Task TA_1'), id).rejects.toMatchObject({
        status: 403,
        message: expect.stringContaining('not bound to this client'),
      });
    // A token of a listed client keeps the spec's rule for unbound services.
    await expect(
      requireActsFor(deps, { isAdmin: false, identity: 'shared' }, 'TS_UNBOUND', 'Task TA_1'),
    ).resolves.toBeUndefined();
  });

  it('an event that names neither a task nor a task service is a 403 for it, before anything is written', async () => {
    const written: unknown[] = [];
    const eventDeps = {
      ...deps,
      releases: { getTask: async () => null },
      events: { create: async (e: unknown) => void written.push(e) },
      publisher: { publish: async () => {} },
    } as unknown as Parameters<typeof createEvent>[0];
    await expect(
      createEvent(eventDeps, { eventType: 'info', message: 'hello' } as never, own),
    ).rejects.toMatchObject({ status: 403 });
    expect(written).toEqual([]);
  });
});
