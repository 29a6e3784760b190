import { describe, expect, it, vi } from 'vitest';
import { correlationIdOf, httpApp } from '#functions/shared/http/app.js';
import { ok } from '#functions/shared/http/response.js';
import { logger } from '#functions/shared/log.js';
import { caller, verifier } from './harness.js';

const call = caller(
  httpApp({
    verifier,
    routes: [
      {
        method: 'GET',
        path: '/things',
        access: 'read',
        handle: async (req) => ok({ query: req.query, base: req.baseUrl }),
      },
      { method: 'PATCH', path: '/things/{id}', access: 'service', handle: async () => ok({}) },
      { method: 'GET', path: '/things/{id}', access: 'read', handle: async () => ok({}) },
    ],
  }),
);

describe('httpApp', () => {
  it('derives the base URL from the forwarded scheme and the host, and hands the query to the route', async () => {
    const res = await call('GET', '/things', { token: 'reader', query: 'a=1' });
    expect(JSON.parse(res.body)).toEqual({ query: { a: '1' }, base: 'https://api.example.com' });
  });

  it('refuses a query value over the limit with a 400 naming the parameter', async () => {
    const res = await call('GET', '/things', { token: 'reader', query: `a=${'x'.repeat(5000)}` });
    expect(res.statusCode).toBe(400);
    expect(Object.keys(JSON.parse(res.body).error.fields)).toEqual(['a']);
  });

  it('answers a CORS preflight with a bare 204 before routing or authentication (API Gateway adds the headers)', async () => {
    const res = await call('OPTIONS', '/things/abc', {
      headers: { origin: 'https://dashboard.example', 'access-control-request-method': 'PATCH' },
    });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    // Without the preflight header, OPTIONS is just a method the path does not support.
    expect((await call('OPTIONS', '/things/abc', { token: 'reader' })).statusCode).toBe(405);
  });

  it('answers the caller’s X-Request-Id when it is a plausible id, and a fresh one otherwise', async () => {
    const kept = await call('GET', '/things', { token: 'reader', headers: { 'x-request-id': 'job-42:a/b' } });
    expect(kept.headers['X-Request-Id']).toBe('job-42:a/b');
    const replaced = await call('GET', '/things', { token: 'reader', headers: { 'x-request-id': 'a\nb' } });
    expect(replaced.headers['X-Request-Id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(correlationIdOf('x'.repeat(129))).not.toBe('x'.repeat(129));
  });

  it('names the caller on the request line of a write, for the audit of who did what', async () => {
    const info = vi.spyOn(logger, 'info').mockImplementation(() => {});
    try {
      await call('PATCH', '/things/abc', { token: 'service', body: '{}' });
      const line = info.mock.calls.find((c) => c[0] === 'request');
      expect(line?.[1]).toMatchObject({ method: 'PATCH', path: '/things/abc', status: 200, actor: 'u1' });
    } finally {
      info.mockRestore();
    }
  });

  it('lists every route it serves in its routeTable', () => {
    const app = httpApp({
      verifier,
      routes: [
        {
          method: 'PATCH',
          path: '/t/{id}',
          access: 'service',
          serviceClients: true,
          handle: async () => ok({}),
        },
      ],
    });
    expect(app.routeTable).toEqual([
      { method: 'PATCH', path: '/t/{id}', access: 'service', serviceClients: true },
    ]);
  });

  it('refuses an idempotent route without a store when it is built', () => {
    expect(() =>
      httpApp({
        verifier,
        routes: [
          { method: 'POST', path: '/t', access: 'admin', idempotent: true, handle: async () => ok({}) },
        ],
      }),
    ).toThrow(/idempotent but has no store/);
  });
});
