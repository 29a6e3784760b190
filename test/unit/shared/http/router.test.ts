import { describe, expect, it } from 'vitest';
import { httpApp } from '#functions/shared/http/app.js';
import { ok } from '#functions/shared/http/response.js';
import type { Route } from '#functions/shared/http/router.js';
import type { IdempotencyRecord, IdempotencyStore, StoredResponse } from '#functions/shared/idempotency.js';
import { caller, verifier } from './harness.js';

const routes: Route[] = [
  { method: 'GET', path: '/things', access: 'read', handle: async () => ok({}) },
  { method: 'POST', path: '/things', access: 'admin', handle: async () => ok({}) },
  { method: 'GET', path: '/things/{id}', access: 'read', handle: async (req) => ok({ id: req.params.id }) },
  { method: 'PATCH', path: '/things/{id}', access: 'service', handle: async () => ok({}) },
  { method: 'DELETE', path: '/things/{id}', access: 'admin', handle: async () => ok({}) },
  {
    method: 'OPTIONS',
    path: '/things/{id}',
    access: 'public',
    handle: async (req) => ok({ body: req.body }),
  },
];
const call = caller(httpApp({ routes, verifier }));

describe('routing', () => {
  it('answers with the Allow header of every route of the matched path', async () => {
    const res = await call('GET', '/things/abc', { token: 'reader' });
    expect(res.statusCode).toBe(200);
    expect(res.headers.Allow).toBe('GET, PATCH, DELETE, OPTIONS');
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

  it('routes OPTIONS like any method, with its JSON body parsed', async () => {
    const res = await call('OPTIONS', '/things/a', { body: '{"ids":["x"]}' });
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ body: { ids: ['x'] } });
  });

  it('decodes path parameters, and answers a malformed percent-encoding as an unknown id (404)', async () => {
    const res = await call('GET', '/things/%E0%A4%A', { token: 'reader' });
    expect(res.statusCode).toBe(404);
    expect(JSON.parse(res.body).error.code).toBe('not_found');
    expect(JSON.parse((await call('GET', '/things/drs%3A%2F%2Fh%2Fx', { token: 'reader' })).body)).toEqual({
      id: 'drs://h/x',
    });
  });
});

/** An in-memory store with the DynamoDB store's semantics (claim ids, completed answers); enough for the HTTP path. */
class MemoryStore implements IdempotencyStore {
  readonly items = new Map<string, { fingerprint: string; claimId: string; response?: StoredResponse }>();
  async claim(key: string, c: { fingerprint: string; claimId: string }) {
    const held = this.items.get(key);
    if (!held) {
      this.items.set(key, { fingerprint: c.fingerprint, claimId: c.claimId });
      return 'claimed' as const;
    }
    return (
      held.response
        ? { state: 'completed', fingerprint: held.fingerprint, response: held.response }
        : { state: 'in_progress', fingerprint: held.fingerprint }
    ) as IdempotencyRecord;
  }
  async complete(key: string, claimId: string, response: StoredResponse) {
    const held = this.items.get(key);
    if (held?.claimId === claimId && !held.response) held.response = response;
  }
  async release(key: string, claimId: string) {
    if (this.items.get(key)?.claimId === claimId && !this.items.get(key)?.response) this.items.delete(key);
  }
}

describe('idempotency keys and the normalized path', () => {
  let runs = 0;
  const notes = caller(
    httpApp({
      verifier,
      idempotency: new MemoryStore(),
      routes: [
        {
          method: 'POST',
          path: '/things/{id}/notes',
          access: 'admin',
          idempotent: true,
          handle: async (req) => ({ status: 201, body: { run: ++runs, id: req.params.id } }),
        },
      ],
    }),
  );
  const post = async (path: string, key: string) => {
    const res = await notes('POST', path, {
      token: 'admin',
      body: '{"n":1}',
      headers: { 'idempotency-key': key },
    });
    return { status: res.statusCode, body: JSON.parse(res.body) };
  };

  it('a retry to another spelling of the same path (trailing slash, percent-encoding) replays the first answer', async () => {
    const first = await post('/things/T9/notes', 'spell-1');
    expect(first.status).toBe(201);
    for (const path of ['/things/T9/notes/', '/things/%549/notes', '/things/%54%39/notes/'])
      expect(await post(path, 'spell-1'), path).toEqual(first);
    // Another id is another path: its own key.
    const other = await post('/things/T8/notes', 'spell-1');
    expect(other.body.run).toBe(first.body.run + 1);
  });
});
