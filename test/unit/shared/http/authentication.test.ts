import { describe, expect, it } from 'vitest';
import { httpApp } from '#functions/shared/http/app.js';
import { actorOf } from '#functions/shared/http/authentication.js';
import { ok } from '#functions/shared/http/response.js';
import type { Route } from '#functions/shared/http/router.js';
import { caller, user, verifier } from './harness.js';

const answer: Route['handle'] = async (req) => ok({ sub: req.principal.sub });
const call = caller(
  httpApp({
    verifier,
    routes: [
      { method: 'GET', path: '/read', access: 'read', handle: answer },
      { method: 'GET', path: '/admin', access: 'admin', handle: answer },
      { method: 'GET', path: '/service', access: 'service', handle: answer },
      { method: 'GET', path: '/optional', access: 'optional', handle: answer },
      { method: 'GET', path: '/public', access: 'public', handle: answer },
    ],
  }),
);

describe('authentication and authorization', () => {
  it('answers 401 with WWW-Authenticate when the token is missing or invalid', async () => {
    for (const token of [undefined, 'garbage']) {
      const res = await call('GET', '/read', { token });
      expect(res.statusCode).toBe(401);
      expect(res.headers['WWW-Authenticate']).toBe('Bearer');
    }
  });

  it('answers 403 when a valid token lacks the role; a service route takes a service or an admin', async () => {
    expect((await call('GET', '/admin', { token: 'service' })).statusCode).toBe(403);
    expect((await call('GET', '/service', { token: 'reader' })).statusCode).toBe(403);
    expect((await call('GET', '/service', { token: 'service' })).statusCode).toBe(200);
    expect((await call('GET', '/service', { token: 'admin' })).statusCode).toBe(200);
  });

  it('lets an optional route through without a token, but not with a bad one; a public route never looks', async () => {
    expect(JSON.parse((await call('GET', '/optional')).body)).toEqual({ sub: null });
    expect(JSON.parse((await call('GET', '/optional', { token: 'reader' })).body)).toEqual({ sub: 'u1' });
    expect((await call('GET', '/optional', { token: 'garbage' })).statusCode).toBe(401);
    expect((await call('GET', '/public', { token: 'garbage' })).statusCode).toBe(200);
  });

  it('judges writes as admin, or as the client the token acts for', () => {
    expect(actorOf({ principal: user(['admin']) })).toEqual({ isAdmin: true, identity: null });
    expect(actorOf({ principal: { ...user([]), clientId: 'svc', boundClientOnly: true } })).toEqual({
      isAdmin: false,
      identity: 'svc',
      boundClientOnly: true,
    });
  });
});
