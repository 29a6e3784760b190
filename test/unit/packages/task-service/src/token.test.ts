import { describe, expect, it } from 'vitest';
import { clientCredentials } from '#packages/task-service/src/token.js';

/** Client credentials, cached to the token's expiry. */
function endpoint() {
  const bodies: string[] = [];
  let n = 0;
  const fetch = (async (_url: string, init: RequestInit) => {
    bodies.push(String(init.body));
    return new Response(JSON.stringify({ access_token: `t${++n}`, token_type: 'Bearer', expires_in: 300 }));
  }) as typeof globalThis.fetch;
  return { bodies, fetch };
}

describe('clientCredentials', () => {
  it('asks with the client’s id and secret, and reuses the token until 30 s before it expires', async () => {
    let now = 0;
    const e = endpoint();
    const token = clientCredentials({
      tokenUrl: 'https://idp.test/oauth/token',
      clientId: 'stager',
      clientSecret: 's3cret',
      fetch: e.fetch,
      now: () => now,
    });
    expect(await token()).toBe('t1');
    now = 269_000;
    expect(await token()).toBe('t1');
    now = 270_000;
    expect(await token()).toBe('t2');
    expect(new URLSearchParams(e.bodies[0]).get('grant_type')).toBe('client_credentials');
    expect(new URLSearchParams(e.bodies[0]).get('client_id')).toBe('stager');
    expect(new URLSearchParams(e.bodies[0]).get('client_secret')).toBe('s3cret');
  });

  it('shares one request between concurrent callers, asks again after invalidate, sends a scope if given', async () => {
    const e = endpoint();
    const token = clientCredentials({
      tokenUrl: 'x',
      clientId: 'a',
      clientSecret: 'b',
      scope: 'c/d',
      fetch: e.fetch,
    });
    expect(await Promise.all([token(), token(), token()])).toEqual(['t1', 't1', 't1']);
    token.invalidate?.();
    expect(await token()).toBe('t2');
    expect(new URLSearchParams(e.bodies[0]).get('scope')).toBe('c/d');
  });

  it('throws when the endpoint refuses', async () => {
    const token = clientCredentials({
      tokenUrl: 'x',
      clientId: 'a',
      clientSecret: 'b',
      fetch: (async () => new Response('{}', { status: 401 })) as typeof fetch,
    });
    await expect(token()).rejects.toThrow(/answered 401/);
  });
});
