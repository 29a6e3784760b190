import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { createTokenClient, REFRESH_MARGIN_MS, tokenEnv } from '#functions/adapters/token-client.js';
import { FakeClock } from '#functions/shared/clock.js';

/** A JWT-shaped string with the given exp (the client only reads the payload). */
const jwtWithExp = (expSeconds: number, n = 0) =>
  `h.${Buffer.from(JSON.stringify({ exp: expSeconds, n })).toString('base64url')}.s`;

function fakeEndpoint(answer: (n: number) => { status?: number; body: unknown }) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetchImpl = (async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    const a = answer(calls.length);
    return new Response(JSON.stringify(a.body), { status: a.status ?? 200 });
  }) as unknown as typeof fetch;
  return { calls, fetchImpl };
}

const env = (extra: Record<string, string> = {}) =>
  tokenEnv.parse({
    COORDINATOR_TOKEN_URL: 'https://idp.example/oauth/token',
    COORDINATOR_CLIENT_ID: 'coord',
    COORDINATOR_CLIENT_SECRET: 's3cret',
    ...extra,
  });

describe('token client', () => {
  it('posts client credentials as a form and returns the access token', async () => {
    const clock = new FakeClock();
    const ep = fakeEndpoint(() => ({ body: { access_token: 'tok', expires_in: 3600 } }));
    const client = createTokenClient(env({ COORDINATOR_TOKEN_SCOPE: 'tasks/run' }), {
      fetch: ep.fetchImpl,
      clock,
    });
    expect(await client.token()).toBe('tok');
    expect(ep.calls[0].url).toBe('https://idp.example/oauth/token');
    expect(ep.calls[0].init.method).toBe('POST');
    const form = new URLSearchParams(String(ep.calls[0].init.body));
    expect(Object.fromEntries(form)).toEqual({
      grant_type: 'client_credentials',
      client_id: 'coord',
      client_secret: 's3cret',
      scope: 'tasks/run',
    });
  });

  it('caches until 30 s before the token’s own exp, then fetches a new one', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const exp = clock.nowMs() / 1000 + 120; // a 2-minute token, although expires_in claims an hour
    const ep = fakeEndpoint((n) => ({
      body: { access_token: jwtWithExp(exp + (n - 1) * 1000, n), expires_in: 3600 },
    }));
    const client = createTokenClient(env(), { fetch: ep.fetchImpl, clock });
    const first = await client.token();
    clock.advance(120_000 - REFRESH_MARGIN_MS - 1);
    expect(await client.token()).toBe(first);
    expect(ep.calls).toHaveLength(1);
    clock.advance(2);
    expect(await client.token()).not.toBe(first);
    expect(ep.calls).toHaveLength(2);
  });

  it('uses expires_in when the token is opaque', async () => {
    const clock = new FakeClock();
    const ep = fakeEndpoint((n) => ({ body: { access_token: `opaque-${n}`, expires_in: 60 } }));
    const client = createTokenClient(env(), { fetch: ep.fetchImpl, clock });
    expect(await client.token()).toBe('opaque-1');
    clock.advance(29_000);
    expect(await client.token()).toBe('opaque-1');
    clock.advance(2_000);
    expect(await client.token()).toBe('opaque-2');
  });

  it('shares one request among concurrent callers', async () => {
    const ep = fakeEndpoint(() => ({ body: { access_token: 'tok', expires_in: 3600 } }));
    const client = createTokenClient(env(), { fetch: ep.fetchImpl, clock: new FakeClock() });
    const tokens = await Promise.all([client.token(), client.token(), client.token()]);
    expect(tokens).toEqual(['tok', 'tok', 'tok']);
    expect(ep.calls).toHaveLength(1);
  });

  it('sends JSON or HTTP Basic when configured', async () => {
    const json = fakeEndpoint(() => ({ body: { access_token: 't', expires_in: 60 } }));
    await createTokenClient(env({ COORDINATOR_TOKEN_STYLE: 'json', COORDINATOR_TOKEN_AUDIENCE: 'aud' }), {
      fetch: json.fetchImpl,
    }).token();
    expect(JSON.parse(String(json.calls[0].init.body))).toMatchObject({
      client_id: 'coord',
      audience: 'aud',
    });
    const basic = fakeEndpoint(() => ({ body: { access_token: 't', expires_in: 60 } }));
    await createTokenClient(env({ COORDINATOR_TOKEN_STYLE: 'basic' }), { fetch: basic.fetchImpl }).token();
    const headers = basic.calls[0].init.headers as Record<string, string>;
    expect(headers.Authorization).toBe(`Basic ${Buffer.from('coord:s3cret').toString('base64')}`);
    expect(String(basic.calls[0].init.body)).not.toContain('s3cret');
  });

  it('reads the client secret from Secrets Manager once', async () => {
    const sm = mockClient(SecretsManagerClient);
    sm.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify({ client_secret: 'from-sm' }) });
    const ep = fakeEndpoint((n) => ({ body: { access_token: `t${n}`, expires_in: 1 } }));
    const client = createTokenClient(
      tokenEnv.parse({
        COORDINATOR_TOKEN_URL: 'https://idp.example/oauth/token',
        COORDINATOR_CLIENT_ID: 'coord',
        COORDINATOR_CLIENT_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:1:secret:x',
      }),
      { fetch: ep.fetchImpl, clock: new FakeClock() },
    );
    await client.token();
    await client.token();
    expect(new URLSearchParams(String(ep.calls[0].init.body)).get('client_secret')).toBe('from-sm');
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(1);
    expect(sm.commandCalls(GetSecretValueCommand)[0].args[0].input.SecretId).toContain('secret:x');
    sm.restore();
  });

  it('fails with token_unavailable when the client secret cannot be read, and reads it again next time', async () => {
    const denied = Object.assign(new Error('not allowed'), { name: 'AccessDeniedException' });
    let reads = 0;
    const ep = fakeEndpoint(() => ({ body: { access_token: 'ok', expires_in: 60 } }));
    const client = createTokenClient(
      tokenEnv.parse({
        COORDINATOR_TOKEN_URL: 'https://idp.example/oauth/token',
        COORDINATOR_CLIENT_ID: 'coord',
        COORDINATOR_CLIENT_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:1:secret:x',
      }),
      {
        fetch: ep.fetchImpl,
        clock: new FakeClock(),
        secret: async () => {
          if (++reads === 1) throw denied;
          return 'later';
        },
      },
    );
    const err = await client.token().catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 503, code: 'token_unavailable' });
    expect((err as Error).cause).toBe(denied);
    expect(ep.calls).toHaveLength(0);
    expect(await client.token()).toBe('ok');
    expect(new URLSearchParams(String(ep.calls[0].init.body)).get('client_secret')).toBe('later');
  });

  it('fails with a 503 token_unavailable error when the endpoint refuses, and retries next time', async () => {
    const ep = fakeEndpoint((n) =>
      n === 1
        ? { status: 401, body: { error: 'invalid_client' } }
        : { body: { access_token: 'ok', expires_in: 60 } },
    );
    const client = createTokenClient(env(), { fetch: ep.fetchImpl, clock: new FakeClock() });
    await expect(client.token()).rejects.toMatchObject({ status: 503, code: 'token_unavailable' });
    expect(await client.token()).toBe('ok');
  });

  it('returns no token when no token endpoint is configured', async () => {
    expect(await createTokenClient(tokenEnv.parse({})).token()).toBeNull();
  });
});
