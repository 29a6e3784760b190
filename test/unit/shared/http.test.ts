import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ANONYMOUS, type Principal, type TokenVerifier } from '#functions/shared/auth.js';
import { ConflictError, UnauthorizedError } from '#functions/shared/errors.js';
import { etagMatches, etagOf, httpApp, ok, parse, type Route } from '#functions/shared/http.js';

const user = (roles: string[]): Principal => ({
  ...ANONYMOUS,
  kind: 'user',
  sub: 'u1',
  roles,
  isAdmin: roles.includes('admin'),
  isService: roles.includes('service'),
});
const verifier: TokenVerifier = {
  async verify(token) {
    if (token === 'admin') return user(['admin']);
    if (token === 'service') return user(['service']);
    if (token === 'reader') return user([]);
    throw new UnauthorizedError('Invalid or expired token');
  },
};

const routes: Route[] = [
  {
    method: 'GET',
    path: '/things',
    access: 'read',
    handle: async (req) => ok({ query: req.query, base: req.baseUrl }),
  },
  {
    method: 'POST',
    path: '/things',
    access: 'admin',
    handle: async (req) => ok(parse(z.strictObject({ name: z.string() }), req.body)),
  },
  { method: 'GET', path: '/things/{id}', access: 'read', handle: async (req) => ok({ id: req.params.id }) },
  {
    method: 'GET',
    path: '/minted',
    access: 'read',
    handle: async () => ok({ token: Math.random() }, { 'Cache-Control': 'no-store' }),
  },
  {
    method: 'PATCH',
    path: '/things/{id}',
    access: 'service',
    handle: async () => {
      throw new ConflictError('busy');
    },
  },
  {
    method: 'DELETE',
    path: '/things/{id}',
    access: 'admin',
    handle: async () => {
      throw new Error('secret detail');
    },
  },
];
const app = httpApp({ routes, verifier });

function call(
  method: string,
  path: string,
  opts: { token?: string; body?: string; query?: string; headers?: Record<string, string> } = {},
) {
  const event = {
    rawPath: path,
    rawQueryString: opts.query ?? '',
    headers: {
      host: 'api.example.com',
      'x-forwarded-proto': 'https',
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...opts.headers,
    },
    requestContext: { http: { method }, domainName: 'api.example.com', requestId: 'r1' },
    body: opts.body,
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEventV2;
  return app(event, { awsRequestId: 'req-1' } as Context) as Promise<{
    statusCode: number;
    headers: Record<string, string>;
    body: string;
  }>;
}

describe('httpApp', () => {
  it('answers JSON with Vary and the Allow header of the matched path', async () => {
    const res = await call('GET', '/things/abc', { token: 'reader' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['Content-Type']).toBe('application/json');
    expect(res.headers.Vary).toBe('Accept');
    expect(res.headers.Allow).toBe('GET, PATCH, DELETE');
    expect(JSON.parse(res.body)).toEqual({ id: 'abc' });
  });

  it('answers 405 with Allow for a method the path does not support', async () => {
    const res = await call('PUT', '/things', { token: 'admin' });
    expect(res.statusCode).toBe(405);
    expect(res.headers.Allow).toBe('GET, POST');
    expect(JSON.parse(res.body).error.code).toBe('method_not_allowed');
  });

  it('answers 404 in the JSON error shape for an unknown path', async () => {
    const res = await call('GET', '/nope', { token: 'admin' });
    expect(res.statusCode).toBe(404);
    expect(JSON.parse(res.body)).toEqual({ error: { code: 'not_found', message: 'No such resource' } });
  });

  it('answers 401 with WWW-Authenticate when the token is missing or invalid', async () => {
    for (const token of [undefined, 'garbage']) {
      const res = await call('GET', '/things', { token });
      expect(res.statusCode).toBe(401);
      expect(res.headers['WWW-Authenticate']).toBe('Bearer');
    }
  });

  it('answers 403 when a valid token lacks the role', async () => {
    expect((await call('POST', '/things', { token: 'service', body: '{"name":"x"}' })).statusCode).toBe(403);
    expect((await call('PATCH', '/things/a', { token: 'reader' })).statusCode).toBe(403);
    expect((await call('PATCH', '/things/a', { token: 'service' })).statusCode).toBe(409);
  });

  it('names each invalid or unknown field in a 400', async () => {
    const res = await call('POST', '/things', { token: 'admin', body: '{"name":3,"extra":true}' });
    expect(res.statusCode).toBe(400);
    const body = JSON.parse(res.body);
    expect(body.error.code).toBe('validation_error');
    expect(Object.keys(body.error.fields).sort()).toEqual(['body', 'name']);
  });

  it('answers 400 for a body that is not JSON', async () => {
    const res = await call('POST', '/things', { token: 'admin', body: '{not json' });
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(res.body).error.code).toBe('bad_request');
  });

  it('hides internal errors behind a 500 that names only the request id', async () => {
    const res = await call('DELETE', '/things/a', { token: 'admin' });
    expect(res.statusCode).toBe(500);
    expect(res.body).not.toContain('secret detail');
    expect(JSON.parse(res.body).error.message).toContain('req-1');
  });

  it('derives the base URL from the forwarded scheme and the host', async () => {
    const res = await call('GET', '/things', { token: 'reader', query: 'a=1' });
    expect(JSON.parse(res.body)).toEqual({ query: { a: '1' }, base: 'https://api.example.com' });
  });
});

describe('httpApp options for APIs with their own conventions', () => {
  const drsLike = httpApp({
    verifier,
    errorBody: (e) => ({ msg: e.message, status_code: e.status }),
    routes: [
      {
        method: 'GET',
        path: '/objects/{id}',
        access: 'read',
        handle: async (req) => ok({ id: req.params.id }),
      },
      {
        method: 'OPTIONS',
        path: '/objects/{id}',
        access: 'public',
        handle: async (req) => ok({ body: req.body }),
      },
      {
        method: 'POST',
        path: '/objects/{id}',
        access: 'public',
        handle: async () => {
          throw new Error('secret detail');
        },
      },
    ],
  });
  const send = (method: string, path: string, opts: { token?: string; body?: string } = {}) =>
    drsLike(
      {
        rawPath: path,
        rawQueryString: '',
        headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {},
        requestContext: { http: { method }, domainName: 'api.example.com', requestId: 'r1' },
        body: opts.body,
        isBase64Encoded: false,
      } as unknown as APIGatewayProxyEventV2,
      { awsRequestId: 'req-2' } as Context,
    ) as Promise<{ statusCode: number; headers: Record<string, string>; body: string }>;

  it('renders every error, from routing to a 500, in the body the app asks for', async () => {
    expect(JSON.parse((await send('GET', '/nope', { token: 'reader' })).body)).toEqual({
      msg: 'No such resource',
      status_code: 404,
    });
    const unauthorized = await send('GET', '/objects/a');
    expect(JSON.parse(unauthorized.body)).toEqual({
      msg: 'Authentication credentials were not provided or are invalid',
      status_code: 401,
    });
    expect(unauthorized.headers['WWW-Authenticate']).toBe('Bearer');
    expect(JSON.parse((await send('DELETE', '/objects/a')).body).status_code).toBe(405);
    const crash = await send('POST', '/objects/a');
    expect(crash.statusCode).toBe(500);
    expect(JSON.parse(crash.body)).toEqual({
      msg: 'Internal server error (request req-2)',
      status_code: 500,
    });
  });

  it('routes OPTIONS like any method, with its JSON body parsed, and lists it in Allow', async () => {
    const res = await send('OPTIONS', '/objects/a', { body: '{"ids":["x"]}' });
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ body: { ids: ['x'] } });
    expect(res.headers.Allow).toBe('GET, OPTIONS, POST');
  });

  it('still answers a CORS preflight (OPTIONS with Access-Control-Request-Method) itself, before the OPTIONS route', async () => {
    const res = await drsLike(
      {
        rawPath: '/objects/a',
        rawQueryString: '',
        headers: { origin: 'https://dashboard.example', 'access-control-request-method': 'GET' },
        requestContext: { http: { method: 'OPTIONS' }, domainName: 'api.example.com', requestId: 'r1' },
        isBase64Encoded: false,
      } as unknown as APIGatewayProxyEventV2,
      { awsRequestId: 'req-3' } as Context,
    );
    expect(res).toMatchObject({ statusCode: 204, body: '' });
  });

  it('answers a malformed percent-encoding in a path parameter as an unknown id (404, in the app’s body)', async () => {
    const res = await send('GET', '/objects/%E0%A4%A', { token: 'reader' });
    expect(res.statusCode).toBe(404);
    expect(JSON.parse(res.body)).toEqual({ msg: 'No such resource', status_code: 404 });
    expect(JSON.parse((await send('GET', '/objects/drs%3A%2F%2Fh%2Fx', { token: 'reader' })).body)).toEqual({
      id: 'drs://h/x',
    });
  });
});

describe('conditional reads (ETag / If-None-Match)', () => {
  it('tags a successful GET with a strong ETag: the SHA-256 of the exact body', async () => {
    const res = await call('GET', '/things/abc', { token: 'reader' });
    expect(res.statusCode).toBe(200);
    expect(res.headers.ETag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(res.headers.ETag).toBe(etagOf(res.body));
    // The same state gives the same tag; another state another one.
    expect((await call('GET', '/things/abc', { token: 'reader' })).headers.ETag).toBe(res.headers.ETag);
    expect((await call('GET', '/things/abd', { token: 'reader' })).headers.ETag).not.toBe(res.headers.ETag);
  });

  it('answers 304 with no body (and the same ETag) when If-None-Match holds the current tag', async () => {
    const first = await call('GET', '/things/abc', { token: 'reader' });
    const again = await call('GET', '/things/abc', {
      token: 'reader',
      headers: { 'if-none-match': first.headers.ETag },
    });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers.ETag).toBe(first.headers.ETag);
  });

  it('answers 200 with the new body when the tag is stale, and also for a weak or listed match', async () => {
    const current = (await call('GET', '/things/abc', { token: 'reader' })).headers.ETag;
    const stale = await call('GET', '/things/abc', {
      token: 'reader',
      headers: { 'if-none-match': '"old"' },
    });
    expect(stale.statusCode).toBe(200);
    expect(JSON.parse(stale.body)).toEqual({ id: 'abc' });
    for (const header of [`W/${current}`, `"old", ${current}`, '*']) {
      const res = await call('GET', '/things/abc', { token: 'reader', headers: { 'if-none-match': header } });
      expect(res.statusCode).toBe(304);
    }
  });

  it('never tags writes, errors or no-store answers, and checks the token before answering 304', async () => {
    const write = await call('POST', '/things', { token: 'admin', body: '{"name":"x"}' });
    expect(write.statusCode).toBe(200);
    expect(write.headers.ETag).toBeUndefined();
    const missing = await call('GET', '/nope', { token: 'admin', headers: { 'if-none-match': '*' } });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers.ETag).toBeUndefined();
    const minted = await call('GET', '/minted', { token: 'reader', headers: { 'if-none-match': '*' } });
    expect(minted.statusCode).toBe(200);
    expect(minted.headers.ETag).toBeUndefined();
    const anonymous = await call('GET', '/things/abc', { headers: { 'if-none-match': '*' } });
    expect(anonymous.statusCode).toBe(401);
  });

  it('etagMatches compares tags weakly and ignores spacing', () => {
    expect(etagMatches(' "a" ,W/"b"', '"b"')).toBe(true);
    expect(etagMatches('"a"', 'W/"a"')).toBe(true);
    expect(etagMatches('"a"', '"b"')).toBe(false);
  });
});

describe('CORS preflights', () => {
  it('answers a CORS preflight with a bare 204 before routing or authentication (API Gateway adds the headers)', async () => {
    const res = await call('OPTIONS', '/things/abc', {
      headers: { origin: 'https://dashboard.example', 'access-control-request-method': 'PATCH' },
    });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    // Without the preflight header, OPTIONS is just a method the path does not support.
    expect((await call('OPTIONS', '/things/abc', { token: 'reader' })).statusCode).toBe(405);
  });
});
