import { describe, expect, it } from 'vitest';
import { type ActionBody, createTaskServiceClient, join } from '#functions/adapters/task-service-client.js';

const tokens = { token: async () => 'coord-token' };
/** These tests exercise replies, not the URL policy: every URL may be called. */
const OPEN = { allowPrivate: true, allowHttp: true };

/** A fetch double that records the request and answers (or fails) as told: no network. */
function fetchThat(answer: () => Promise<Response>) {
  const calls: { url: string; init: RequestInit }[] = [];
  const impl = (async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    return answer();
  }) as unknown as typeof fetch;
  return { calls, impl };
}

const netError = (code: string) =>
  Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error(code), { code }) });

describe('task service client', () => {
  it('GETs {url}/status with the bearer token and accepts 200 + JSON with a string name', async () => {
    const f = fetchThat(
      async () => new Response(JSON.stringify({ name: 'svc', version: '1' }), { status: 200 }),
    );
    const out = await createTaskServiceClient(tokens, { policy: OPEN, fetch: f.impl }).status(
      'http://svc:1/',
    );
    expect(out).toEqual({ ok: true, status: 200, body: { name: 'svc', version: '1' } });
    expect(f.calls[0].url).toBe('http://svc:1/status');
    expect((f.calls[0].init.headers as Record<string, string>).Authorization).toBe('Bearer coord-token');
  });

  it('POSTs actions to {url}/tasks as JSON', async () => {
    const f = fetchThat(async () => new Response(JSON.stringify({ state: 'pending' }), { status: 200 }));
    const body: ActionBody = { action: 'initialize', task_id: 'TA_1', release_id: 'RE_1', studies: ['SD_1'] };
    const out = await createTaskServiceClient(tokens, { policy: OPEN, fetch: f.impl }).action(
      'http://svc:1',
      body,
      1000,
    );
    expect(out).toEqual({ ok: true, status: 200, body: { state: 'pending' } });
    expect(f.calls[0].url).toBe('http://svc:1/tasks');
    expect(f.calls[0].init.method).toBe('POST');
    expect(JSON.parse(String(f.calls[0].init.body))).toEqual(body);
  });

  it.each([
    ['refused', netError('ECONNREFUSED'), 'unreachable', 'connection refused'],
    ['reset', netError('ECONNRESET'), 'unreachable', 'connection reset'],
    ['dns', netError('ENOTFOUND'), 'unreachable', 'host not found'],
    [
      'timeout',
      new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
      'timeout',
      'timed out',
    ],
  ])('classifies a %s failure', async (_what, error, kind, message) => {
    const f = fetchThat(async () => {
      throw error;
    });
    const out = await createTaskServiceClient(tokens, { policy: OPEN, fetch: f.impl }).status('http://svc');
    expect(out).toEqual({ ok: false, failure: { kind, message: expect.stringContaining(message) } });
  });

  it('classifies wrong status, non-JSON and bad bodies', async () => {
    const client = (r: () => Response) =>
      createTaskServiceClient(tokens, { policy: OPEN, fetch: fetchThat(async () => r()).impl });
    expect(await client(() => new Response('x', { status: 503 })).status('http://s')).toMatchObject({
      ok: false,
      failure: { kind: 'status', status: 503 },
    });
    expect(await client(() => new Response('<html>', { status: 200 })).status('http://s')).toMatchObject({
      failure: { kind: 'not_json' },
    });
    expect(
      await client(() => new Response('{"message":{"name":"x"}}', { status: 200 })).status('http://s'),
    ).toMatchObject({
      failure: { kind: 'bad_body' },
    });
    expect(
      await client(() => new Response('[1]', { status: 200 })).action(
        'http://s',
        { action: 'start', task_id: 't', release_id: 'r' },
        50,
      ),
    ).toMatchObject({ failure: { kind: 'bad_body' } });
    expect(
      await client(() => new Response('', { status: 302, headers: { Location: 'http://elsewhere' } })).status(
        'http://s',
      ),
    ).toMatchObject({ failure: { kind: 'status', status: 302 } });
  });

  it('sends no Authorization header when there is no token', async () => {
    const f = fetchThat(async () => new Response('{"name":"n"}', { status: 200 }));
    await createTaskServiceClient({ token: async () => null }, { policy: OPEN, fetch: f.impl }).status(
      'http://s',
    );
    expect((f.calls[0].init.headers as Record<string, string>).Authorization).toBeUndefined();
  });

  it('never builds a double slash', () => {
    expect(join('http://a/b///', '/tasks')).toBe('http://a/b/tasks');
  });
});
