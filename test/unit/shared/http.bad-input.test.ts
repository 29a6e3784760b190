import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { ANONYMOUS, type TokenVerifier } from '#functions/shared/auth.js';
import { UnauthorizedError } from '#functions/shared/errors.js';
import { httpApp, nestsDeeperThan, ok, type Route } from '#functions/shared/http.js';
import {
  canonicalJson,
  type IdempotencyRecord,
  type IdempotencyStore,
  type StoredResponse,
} from '#functions/shared/idempotency.js';
import { LIMITS } from '#functions/shared/limits.js';

/**
 * Bad input is a 400, never a 500: bodies nested deep enough to exhaust the stack of anything that walks them are
 * refused before they are parsed; the idempotency fingerprint walks a body without recursion; and an idempotency key
 * belongs to the route's normalized path, not to its spelling.
 */

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

const verifier: TokenVerifier = {
  async verify(token) {
    if (token === 'admin') return { ...ANONYMOUS, kind: 'user', sub: 'a', isAdmin: true, roles: ['admin'] };
    throw new UnauthorizedError('Invalid or expired token');
  },
};

let runs = 0;
const routes: Route[] = [
  { method: 'POST', path: '/public', access: 'public', handle: async (req) => ok({ got: typeof req.body }) },
  {
    method: 'POST',
    path: '/things/{id}/notes',
    access: 'admin',
    idempotent: true,
    handle: async (req) => ({ status: 201, body: { run: ++runs, id: req.params.id } }),
  },
];
const store = new MemoryStore();
const app = httpApp({ routes, verifier, idempotency: store });

async function call(method: string, path: string, body: string, headers: Record<string, string> = {}) {
  const event = {
    rawPath: path,
    rawQueryString: '',
    headers: { host: 'api.example.com', ...headers },
    requestContext: { http: { method }, domainName: 'api.example.com', requestId: 'r1' },
    body,
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEventV2;
  const res = (await app(event, { awsRequestId: 'req-1' } as Context)) as {
    statusCode: number;
    body: string;
  };
  return { status: res.statusCode, body: JSON.parse(res.body || 'null') };
}

const nested = (depth: number, inner = '1') => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;

describe('request bodies nested too deep', () => {
  it('a 12 KB body nested 6,000 deep with an Idempotency-Key is a 400 naming the body, and claims no key', async () => {
    const body = `{"text":${nested(6000)}}`;
    expect(body.length).toBeGreaterThan(12_000);
    const res = await call('POST', '/things/T1/notes', body, {
      authorization: 'Bearer admin',
      'idempotency-key': 'deep-1',
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_error');
    expect(res.body.error.fields.body[0]).toMatch(/levels deep/);
    expect(store.items.size).toBe(0);
  });

  it('an over-size body nested 140,000 deep on a public route is a 400, not a 500', async () => {
    const body = `{"a":${nested(140_000)}}`;
    expect(body.length).toBeGreaterThan(LIMITS.bodyBytes);
    const res = await call('POST', '/public', body);
    expect(res.status).toBe(400);
    expect(res.body.error.fields.body[0]).toMatch(/levels deep/);
  });

  it('counts only brackets outside strings, and accepts bodies at the limit', async () => {
    expect(nestsDeeperThan(nested(LIMITS.bodyDepth), LIMITS.bodyDepth)).toBe(false);
    expect(nestsDeeperThan(nested(LIMITS.bodyDepth + 1), LIMITS.bodyDepth)).toBe(true);
    expect(nestsDeeperThan(JSON.stringify({ s: '['.repeat(1000), t: 'a\\"[[[[' }), 2)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify([{ a: [{ b: 1 }] }, [[2]]]), 3)).toBe(true);
    const ok = await call('POST', '/public', JSON.stringify({ a: JSON.parse(nested(LIMITS.bodyDepth - 1)) }));
    expect(ok.status).toBe(200);
  });
});

describe('the idempotency fingerprint', () => {
  it('sorts keys at every level and walks any depth without recursion', () => {
    expect(canonicalJson({ b: [1, { d: 1, c: [undefined, null] }], a: 'x', u: undefined })).toBe(
      '{"a":"x","b":[1,{"c":[null,null],"d":1}]}',
    );
    expect(canonicalJson(undefined)).toBe('null');
    // Far deeper than the recursive version could go (it overflowed near 6,000): 50,000 levels.
    let deep: unknown = 1;
    for (let i = 0; i < 50_000; i++) deep = { k: [deep] };
    const text = canonicalJson(deep);
    expect(text.length).toBe(50_000 * 8 + 1);
    expect(text.startsWith('{"k":[{"k":[')).toBe(true);
  });
});

describe('idempotency keys and the normalized path', () => {
  it('a retry to another spelling of the same path (trailing slash, percent-encoding) replays the first answer', async () => {
    const headers = { authorization: 'Bearer admin', 'idempotency-key': 'spell-1' };
    const first = await call('POST', '/things/T9/notes', '{"n":1}', headers);
    expect(first.status).toBe(201);
    for (const path of ['/things/T9/notes/', '/things/%549/notes', '/things/%54%39/notes/']) {
      const again = await call('POST', path, '{"n":1}', headers);
      expect(again, path).toEqual(first);
    }
    // Another id is another path: its own key.
    const other = await call('POST', '/things/T8/notes', '{"n":1}', headers);
    expect(other.body.run).toBe(first.body.run + 1);
  });
});
