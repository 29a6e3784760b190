import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKey } from '#local/jwt.js';
import { type CoordinatorApi, seedStudies, startCoordinatorApi } from '#test/helpers/coordinator-api.js';
import { type FakeTaskService, startFakeTaskService } from '#test/helpers/fake-task-service/index.js';

let api: CoordinatorApi;
let fake: FakeTaskService;
const STUDY = 'SD_33333333';
const ids: Record<string, string> = {};

beforeAll(async () => {
  api = await startCoordinatorApi();
  fake = await startFakeTaskService();
  await seedStudies(api, [STUDY]);
  ids.ts = (
    await api.call('POST', '/task-services', {
      body: { name: 'svc', description: '', author: '', url: fake.url },
    })
  ).body.item_id;
  const release = (await api.call('POST', '/releases', { body: { name: 'r', studies: [STUDY] } })).body;
  ids.re = release.item_id;
  ids.ta = release.tasks[0].item_id;
  ids.rn = (
    await api.call('POST', '/release-notes', { body: { description: 'n', release: ids.re } })
  ).body.item_id;
  ids.ev = (await api.call('POST', '/events', { body: { message: 'e' } })).body.item_id;
});
afterAll(async () => {
  await fake?.stop();
  await api?.close();
});

type Who = 'admin' | 'service' | 'reader';
interface RouteCase {
  method: string;
  path: () => string;
  body?: () => unknown;
  allowed: Who[];
}

const ALL: Who[] = ['admin', 'service', 'reader'];
const ROUTES: RouteCase[] = [
  { method: 'GET', path: () => '/task-services', allowed: ALL },
  { method: 'GET', path: () => `/task-services/${ids.ts}`, allowed: ALL },
  {
    method: 'POST',
    path: () => '/task-services',
    body: () => ({ name: 'x', url: 'ftp://no' }),
    allowed: ['admin'],
  },
  {
    method: 'PATCH',
    path: () => `/task-services/${ids.ts}`,
    body: () => ({ description: 'd' }),
    allowed: ['admin'],
  },
  { method: 'DELETE', path: () => '/task-services/TS_00000000', allowed: ['admin'] },
  { method: 'GET', path: () => '/releases', allowed: ALL },
  { method: 'GET', path: () => `/releases/${ids.re}`, allowed: ALL },
  { method: 'POST', path: () => '/releases', body: () => ({ name: 'x', studies: [] }), allowed: ['admin'] },
  {
    method: 'PATCH',
    path: () => `/releases/${ids.re}`,
    body: () => ({ description: 'd' }),
    allowed: ['admin'],
  },
  { method: 'DELETE', path: () => '/releases/RE_00000000', allowed: ['admin'] },
  { method: 'POST', path: () => `/releases/${ids.re}/publish`, allowed: ['admin'] },
  { method: 'GET', path: () => '/tasks', allowed: ALL },
  { method: 'GET', path: () => `/tasks/${ids.ta}`, allowed: ALL },
  {
    method: 'PATCH',
    path: () => `/tasks/${ids.ta}`,
    body: () => ({ progress: 1 }),
    allowed: ['admin', 'service'],
  },
  { method: 'GET', path: () => '/release-notes', allowed: ALL },
  { method: 'GET', path: () => `/release-notes/${ids.rn}`, allowed: ALL },
  { method: 'POST', path: () => '/release-notes', body: () => ({ description: 'x' }), allowed: ['admin'] },
  {
    method: 'PATCH',
    path: () => `/release-notes/${ids.rn}`,
    body: () => ({ author: 'a' }),
    allowed: ['admin'],
  },
  { method: 'DELETE', path: () => '/release-notes/RN_00000000', allowed: ['admin'] },
  { method: 'GET', path: () => '/events', allowed: ALL },
  { method: 'GET', path: () => `/events/${ids.ev}`, allowed: ALL },
  { method: 'POST', path: () => '/events', body: () => ({ message: 'm' }), allowed: ['admin', 'service'] },
  { method: 'DELETE', path: () => '/events/EV_00000000', allowed: ['admin'] },
  { method: 'GET', path: () => '/studies', allowed: ALL },
  { method: 'GET', path: () => `/studies/${STUDY}`, allowed: ALL },
];

/** The path template as written above, e.g. /releases/${ids.re}. */
const label = (r: RouteCase) =>
  r.path
    .toString()
    .replace(/^\(\) => /, '')
    .replace(/[`']/g, '');

const tokenFor = (who: Who) =>
  who === 'admin' ? api.idp.admin() : who === 'service' ? api.idp.service() : api.idp.reader();

describe('roles', () => {
  for (const route of ROUTES) {
    it(`${route.method} ${label(route)}: ${route.allowed.join('/')} allowed, others 403`, async () => {
      for (const who of ALL) {
        const res = await api.call(route.method, route.path(), {
          token: tokenFor(who),
          body: route.body?.(),
        });
        if (route.allowed.includes(who)) expect([401, 403]).not.toContain(res.status);
        else {
          expect(res.status).toBe(403);
          expect(res.body.error.code).toBe('forbidden');
        }
      }
    });
  }

  it('takes roles from Cognito groups and OAuth scopes too', async () => {
    const groups = api.idp.mint({ roles: [], extra: { 'cognito:groups': ['admin'] } });
    expect(
      (await api.call('PATCH', `/releases/${ids.re}`, { token: groups, body: { tags: [] } })).status,
    ).toBe(200);
    const scope = api.idp.mint({ roles: [], extra: { scope: 'coordinator/service' } });
    expect((await api.call('POST', '/events', { token: scope, body: { message: 'scoped' } })).status).toBe(
      200,
    );
  });
});

describe('refusals', () => {
  const cases: [string, () => string | null][] = [
    ['no token', () => null],
    ['an expired token', () => api.idp.mint({ roles: ['admin'], expiresIn: -5 })],
    [
      'a token from another issuer',
      () => api.idp.mint({ roles: ['admin'], issuer: 'http://elsewhere.example' }),
    ],
    ['a token for another audience', () => api.idp.mint({ roles: ['admin'], audience: 'someone-else' })],
    [
      'a forged signature',
      () => api.idp.mint({ roles: ['admin'], key: { ...generateSigningKey(), kid: 'x' } }),
    ],
    ['garbage', () => 'not.a.jwt'],
  ];
  for (const [what, token] of cases) {
    it(`answers 401 with WWW-Authenticate: Bearer and the JSON error body for ${what}`, async () => {
      const res = await api.call('GET', '/releases', { token: token() ?? null });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(res.body.error.code).toBe('unauthorized');
      expect(res.text).not.toContain('at ');
    });
  }

  it('answers 401 to a non-Bearer Authorization scheme', async () => {
    const res = await api.call('GET', '/studies', { token: null, headers: { Authorization: 'Basic YTpi' } });
    expect(res.status).toBe(401);
  });
});

describe('every response', () => {
  it('carries Content-Type, Vary and Allow, on success and on errors', async () => {
    for (const [method, path, allow] of [
      ['GET', '/releases', 'GET, POST'],
      ['GET', `/releases/${ids.re}`, 'GET, PATCH, DELETE'],
      ['GET', '/releases/RE_00000000', 'GET, PATCH, DELETE'],
      ['GET', `/task-services/${ids.ts}`, 'GET, PATCH, DELETE'],
      ['GET', '/tasks', 'GET'],
      ['GET', '/events/EV_00000000', 'GET, DELETE'],
      ['GET', '/studies', 'GET'],
    ]) {
      const res = await api.call(method, path);
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(res.headers.get('vary')).toBe('Accept');
      expect(res.headers.get('allow')).toBe(allow);
    }
  });

  it('answers a wrong method with 405 and Allow', async () => {
    for (const [method, path, allow] of [
      ['PUT', '/releases', 'GET, POST'],
      ['GET', `/releases/${ids.re}/publish`, 'POST'],
      ['POST', `/tasks/${ids.ta}`, 'GET, PATCH'],
      ['PATCH', '/events/EV_00000000', 'GET, DELETE'],
      ['DELETE', '/task-services', 'GET, POST'],
    ]) {
      const res = await api.call(method, path, { body: method === 'GET' ? undefined : {} });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe(allow);
      expect(res.body.error.code).toBe('method_not_allowed');
    }
  });

  it('answers unknown paths with 404 in the JSON error shape', async () => {
    const res = await api.call('GET', '/nothing-here');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });
});
