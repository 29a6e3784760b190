import { describe, expect, it } from 'vitest';
import { httpApp } from '#functions/shared/http/app.js';
import { nestsDeeperThan } from '#functions/shared/http/body.js';
import { ok } from '#functions/shared/http/response.js';
import type { IdempotencyStore } from '#functions/shared/idempotency.js';
import { LIMITS } from '#functions/shared/limits.js';
import { caller, verifier } from './harness.js';

/** Bad input is a 400, never a 500: bodies nested deep enough to exhaust the stack of anything that walks them are
 * refused before they are parsed. */

/** A store that records every claim: a body refused before its route runs claims no key. */
const claims: string[] = [];
const store: IdempotencyStore = {
  async claim(key) {
    claims.push(key);
    return 'claimed';
  },
  async complete() {},
  async release() {},
};

const call = caller(
  httpApp({
    verifier,
    idempotency: store,
    routes: [
      { method: 'POST', path: '/public', access: 'public', handle: async (req) => ok({ got: req.body }) },
      {
        method: 'POST',
        path: '/things/{id}/notes',
        access: 'admin',
        idempotent: true,
        handle: async () => ({ status: 201, body: {} }),
      },
    ],
  }),
);
const post = async (
  path: string,
  body: string,
  opts: { token?: string; headers?: Record<string, string> } = {},
) => {
  const res = await call('POST', path, { body, ...opts });
  return { status: res.statusCode, body: JSON.parse(res.body || 'null') };
};

const nested = (depth: number, inner = '1') => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;

describe('request bodies', () => {
  it('answers 400 for a body that is not JSON', async () => {
    const res = await post('/public', '{not json');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('bad_request');
  });

  it('reads an empty or blank body as none', async () => {
    expect((await post('/public', '')).body).toEqual({});
    expect((await post('/public', '  \n')).body).toEqual({});
  });

  it('refuses an over-size body with a 400 naming its largest field', async () => {
    const res = await post(
      '/public',
      JSON.stringify({ name: 'x', description: 'd'.repeat(LIMITS.bodyBytes) }),
    );
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.error.fields)).toEqual(['description']);
    expect(res.body.error.fields.description[0]).toMatch(/is too large/);
  });
});

describe('request bodies nested too deep', () => {
  it('a 12 KB body nested 6,000 deep with an Idempotency-Key is a 400 naming the body, and claims no key', async () => {
    const body = `{"text":${nested(6000)}}`;
    expect(body.length).toBeGreaterThan(12_000);
    const res = await post('/things/T1/notes', body, {
      token: 'admin',
      headers: { 'idempotency-key': 'deep-1' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_error');
    expect(res.body.error.fields.body[0]).toMatch(/levels deep/);
    expect(claims).toEqual([]);
  });

  it('an over-size body nested 140,000 deep on a public route is a 400, not a 500', async () => {
    const body = `{"a":${nested(140_000)}}`;
    expect(body.length).toBeGreaterThan(LIMITS.bodyBytes);
    const res = await post('/public', body);
    expect(res.status).toBe(400);
    expect(res.body.error.fields.body[0]).toMatch(/levels deep/);
  });

  it('counts only brackets outside strings, and accepts bodies at the limit', async () => {
    expect(nestsDeeperThan(nested(LIMITS.bodyDepth), LIMITS.bodyDepth)).toBe(false);
    expect(nestsDeeperThan(nested(LIMITS.bodyDepth + 1), LIMITS.bodyDepth)).toBe(true);
    expect(nestsDeeperThan(JSON.stringify({ s: '['.repeat(1000), t: 'a\\"[[[[' }), 2)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify([{ a: [{ b: 1 }] }, [[2]]]), 3)).toBe(true);
    const ok = await post('/public', JSON.stringify({ a: JSON.parse(nested(LIMITS.bodyDepth - 1)) }));
    expect(ok.status).toBe(200);
  });
});
