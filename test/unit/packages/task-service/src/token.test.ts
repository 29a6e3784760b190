import { describe, expect, it } from 'vitest';
import { clientCredentials } from '#packages/task-service/src/token.js';

/** Client credentials, cached to the token's expiry. */
function endpoint(
  answer: (n: number) => { status?: number; body: unknown } = (n) => ({
    body: { access_token: `t${n}`, token_type: 'Bearer', expires_in: 300 },
  }),
) {
  const requests: RequestInit[] = [];
  const fetch = (async (_url: string, init: RequestInit) => {
    requests.push(init);
    const a = answer(requests.length);
    return new Response(typeof a.body === 'string' ? a.body : JSON.stringify(a.body), {
      status: a.status ?? 200,
    });
  }) as typeof globalThis.fetch;
  const form = (i: number) => new URLSearchParams(String(requests[i].body));
  return { requests, form, fetch };
}

/** A JWT-shaped token with the given exp (the cache reads only the payload). */
const jwt = (expSeconds: number, n: number) =>
  `h.${Buffer.from(JSON.stringify({ exp: expSeconds, n })).toString('base64url')}.s`;

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
    expect(e.form(0).get('grant_type')).toBe('client_credentials');
    expect(e.form(0).get('client_id')).toBe('stager');
    expect(e.form(0).get('client_secret')).toBe('s3cret');
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
    expect(e.form(0).get('scope')).toBe('c/d');
  });

  it('expires a JWT at its exp when that comes before expires_in, and does not cache a token without either', async () => {
    let now = 1_000_000;
    const e = endpoint((n) => ({
      body:
        n === 1
          ? { access_token: jwt(now / 1000 + 60, n), expires_in: 3600 }
          : { access_token: `opaque-${n}` },
    }));
    const token = clientCredentials({
      tokenUrl: 'x',
      clientId: 'a',
      clientSecret: 'b',
      fetch: e.fetch,
      now: () => now,
    });
    const first = await token();
    now += 29_000;
    expect(await token()).toBe(first);
    now += 1_000;
    expect(await token()).toBe('opaque-2');
    expect(await token()).toBe('opaque-3');
  });

  it('authenticates as the style asks: HTTP Basic, or a JSON body with an audience', async () => {
    const basic = endpoint();
    await clientCredentials({
      tokenUrl: 'x',
      clientId: 'a b',
      clientSecret: 's:1',
      style: 'basic',
      fetch: basic.fetch,
    })();
    const headers = basic.requests[0].headers as Record<string, string>;
    expect(headers.Authorization).toBe(`Basic ${Buffer.from('a%20b:s%3A1').toString('base64')}`);
    expect(Object.fromEntries(basic.form(0))).toEqual({ grant_type: 'client_credentials' });
    const json = endpoint();
    await clientCredentials({
      tokenUrl: 'x',
      clientId: 'a',
      clientSecret: 'b',
      audience: 'https://api',
      style: 'json',
      fetch: json.fetch,
    })();
    expect((json.requests[0].headers as Record<string, string>)['Content-Type']).toBe('application/json');
    expect(JSON.parse(String(json.requests[0].body))).toEqual({
      grant_type: 'client_credentials',
      client_id: 'a',
      client_secret: 'b',
      audience: 'https://api',
    });
  });

  it('reads a secret given as a function each time it fetches a token', async () => {
    const e = endpoint((n) => ({ body: { access_token: `t${n}` } }));
    let reads = 0;
    const token = clientCredentials({
      tokenUrl: 'x',
      clientId: 'a',
      clientSecret: async () => `secret-${++reads}`,
      fetch: e.fetch,
    });
    await token();
    await token();
    expect([e.form(0).get('client_secret'), e.form(1).get('client_secret')]).toEqual([
      'secret-1',
      'secret-2',
    ]);
  });

  it('throws what went wrong, keeps the network error as the cause, and asks again on the next call', async () => {
    const refused = new TypeError('fetch failed');
    let calls = 0;
    const token = clientCredentials({
      tokenUrl: 'x',
      clientId: 'a',
      clientSecret: 'b',
      fetch: (async () => {
        calls++;
        if (calls === 1) throw refused;
        if (calls === 2) return new Response('{}', { status: 401 });
        if (calls === 3) return new Response('{"token_type":"Bearer"}');
        return new Response('{"access_token":"ok"}');
      }) as typeof fetch,
    });
    const unreachable = await token().catch((e: Error) => e);
    expect(unreachable).toMatchObject({ message: 'the token endpoint is unreachable: fetch failed' });
    expect((unreachable as Error).cause).toBe(refused);
    await expect(token()).rejects.toThrow(/answered 401/);
    await expect(token()).rejects.toThrow(/no access_token/);
    expect(await token()).toBe('ok');
  });
});
