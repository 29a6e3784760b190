import type { Server } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLocalApi } from '#local/http-server.js';

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

async function serve(
  load: Parameters<typeof createLocalApi>[0]['load'],
  intercept?: () => null | { status: number; body: unknown },
  corsOrigins?: string[],
) {
  server = createLocalApi({
    functions: [
      {
        name: 'Things',
        entry: 'things.ts',
        routes: {},
        paths: ['/things', '/things/{id}'],
        tables: {},
        bearerOnly: true,
      },
    ],
    load,
    intercept,
    corsOrigins,
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server!.address() as { port: number }).port}`;
}

describe('local API server', () => {
  it('imports a handler module again after a failed import, so a module written later is picked up', async () => {
    let attempts = 0;
    const url = await serve(async () => {
      attempts++;
      if (attempts === 1) throw new Error('Cannot find module');
      return async (event) => ({ statusCode: 200, body: JSON.stringify({ path: event.rawPath }) });
    });
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const first = await fetch(`${url}/things/1`);
    const logged = stderr.mock.calls.map((c) => String(c[0])).join('');
    stderr.mockRestore();
    expect(logged).toContain('Cannot find module');
    expect(first.status).toBe(500);
    expect(await first.json()).toEqual({
      error: { code: 'internal_error', message: 'Internal server error' },
    });
    const second = await fetch(`${url}/things/1`);
    expect(second.status).toBe(200);
    expect(await second.json()).toEqual({ path: '/things/1' });
    await fetch(`${url}/things`);
    expect(attempts).toBe(2);
  });

  it('answers from intercept before routing', async () => {
    const url = await serve(
      async () => async () => ({ statusCode: 200 }),
      () => ({ status: 503, body: { error: { code: 'not_ready', message: 'starting' } } }),
    );
    const res = await fetch(`${url}/things`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/json');
  });

  it('answers CORS preflights itself and adds Access-Control-* headers for the allowed origins only', async () => {
    let calls = 0;
    const dashboard = 'http://127.0.0.1:3005';
    const url = await serve(
      async () => async () => {
        calls++;
        return {
          statusCode: 200,
          headers: { 'Content-Type': 'application/json', Vary: 'Accept' },
          body: '{}',
        };
      },
      undefined,
      [dashboard],
    );
    const preflight = await fetch(`${url}/things/1`, {
      method: 'OPTIONS',
      headers: {
        Origin: dashboard,
        'Access-Control-Request-Method': 'PATCH',
        'Access-Control-Request-Headers': 'authorization, if-none-match, idempotency-key',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(dashboard);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('PATCH');
    for (const h of ['authorization', 'content-type', 'if-none-match', 'idempotency-key'])
      expect(preflight.headers.get('access-control-allow-headers')).toContain(h);
    expect(calls).toBe(0);

    const read = await fetch(`${url}/things/1`, { headers: { Origin: dashboard } });
    expect(read.headers.get('access-control-allow-origin')).toBe(dashboard);
    expect(read.headers.get('access-control-expose-headers')).toContain('etag');
    expect(read.headers.get('vary')).toBe('Accept, Origin');

    const stranger = await fetch(`${url}/things/1`, { headers: { Origin: 'https://evil.example' } });
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull();
    const strangerPreflight = await fetch(`${url}/things/1`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'DELETE' },
    });
    expect(strangerPreflight.headers.get('access-control-allow-origin')).toBeNull();
    expect(calls).toBe(2);
  });
});
