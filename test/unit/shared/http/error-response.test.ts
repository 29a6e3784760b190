import { describe, expect, it } from 'vitest';
import { ConflictError } from '#functions/shared/errors.js';
import { httpApp } from '#functions/shared/http/app.js';
import { toErrorResponse } from '#functions/shared/http/error-response.js';
import { ok } from '#functions/shared/http/response.js';
import { caller, verifier } from './harness.js';

const crash = async () => {
  throw new Error('secret detail');
};

describe('errors as answers', () => {
  const call = caller(
    httpApp({
      verifier,
      routes: [
        {
          method: 'PATCH',
          path: '/things/{id}',
          access: 'public',
          handle: async () => {
            throw new ConflictError('busy');
          },
        },
        { method: 'DELETE', path: '/things/{id}', access: 'public', handle: crash },
      ],
    }),
  );

  it('answers an AppError with its status and message in the project’s error body', async () => {
    const res = await call('PATCH', '/things/a');
    expect(res.statusCode).toBe(409);
    expect(JSON.parse(res.body)).toEqual({ error: { code: 'conflict', message: 'busy' } });
  });

  it('hides internal errors behind a 500 that names only the request id', async () => {
    const res = await call('DELETE', '/things/a');
    expect(res.statusCode).toBe(500);
    expect(res.body).not.toContain('secret detail');
    expect(JSON.parse(res.body).error.message).toContain('req-1');
  });

  it('answers DynamoDB throttling with a 503 and a transaction conflict with a 409, both with Retry-After', () => {
    const throttled = toErrorResponse({ name: 'ThrottlingException' }, 'r');
    expect(throttled).toMatchObject({ status: 503, headers: { 'Retry-After': '1' } });
    expect(toErrorResponse({ name: 'Whatever', $retryable: { throttling: true } }, 'r').status).toBe(503);
    const conflict = toErrorResponse({ name: 'TransactionConflictException' }, 'r');
    expect(conflict).toMatchObject({ status: 409, headers: { 'Retry-After': '1' } });
    expect(toErrorResponse({ name: 'ValidationException' }, 'r').status).toBe(500);
  });
});

describe('an app with an error body of its own', () => {
  const call = caller(
    httpApp({
      verifier,
      errorBody: (e) => ({ msg: e.message, status_code: e.status }),
      routes: [
        {
          method: 'GET',
          path: '/objects/{id}',
          access: 'read',
          handle: async (req) => ok({ id: req.params.id }),
        },
        { method: 'POST', path: '/objects/{id}', access: 'public', handle: crash },
      ],
    }),
    'req-2',
  );

  it('renders every error, from routing to a 500, in the body the app asks for', async () => {
    expect(JSON.parse((await call('GET', '/nope', { token: 'reader' })).body)).toEqual({
      msg: 'No such resource',
      status_code: 404,
    });
    const unauthorized = await call('GET', '/objects/a');
    expect(JSON.parse(unauthorized.body)).toEqual({
      msg: 'Authentication credentials were not provided or are invalid',
      status_code: 401,
    });
    expect(unauthorized.headers['WWW-Authenticate']).toBe('Bearer');
    expect(JSON.parse((await call('DELETE', '/objects/a')).body).status_code).toBe(405);
    expect(JSON.parse((await call('GET', '/objects/%E0%A4%A', { token: 'reader' })).body)).toEqual({
      msg: 'No such resource',
      status_code: 404,
    });
    const crashed = await call('POST', '/objects/a');
    expect(crashed.statusCode).toBe(500);
    expect(JSON.parse(crashed.body)).toEqual({
      msg: 'Internal server error (request req-2)',
      status_code: 500,
    });
  });
});
