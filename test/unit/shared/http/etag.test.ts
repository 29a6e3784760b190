import { describe, expect, it } from 'vitest';
import { httpApp } from '#functions/shared/http/app.js';
import { etagMatches, etagOf } from '#functions/shared/http/etag.js';
import { ok } from '#functions/shared/http/response.js';
import { caller, verifier } from './harness.js';

const call = caller(
  httpApp({
    verifier,
    routes: [
      { method: 'POST', path: '/things', access: 'admin', handle: async () => ok({ made: true }) },
      {
        method: 'GET',
        path: '/things/{id}',
        access: 'read',
        handle: async (req) => ok({ id: req.params.id }),
      },
      {
        method: 'GET',
        path: '/minted',
        access: 'read',
        handle: async () => ok({ token: Math.random() }, { 'Cache-Control': 'no-store' }),
      },
    ],
  }),
);

describe('conditional reads (ETag / If-None-Match)', () => {
  it('tags a successful GET with a strong ETag: the SHA-256 of the exact body', async () => {
    const res = await call('GET', '/things/abc', { token: 'reader' });
    expect(res.statusCode).toBe(200);
    expect(res.headers.ETag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(res.headers.ETag).toBe(etagOf(res.body));
    // The same state gives the same tag; another state another one.
    expect((await call('GET', '/things/abc', { token: 'reader' })).headers.ETag).toBe(res.headers.ETag);
    expect((await call('GET', '/things/abd', { token: 'reader' })).headers.ETag).not.toBe(res.headers.ETag);
  });

  it('answers 304 with no body (and the same ETag) when If-None-Match holds the current tag', async () => {
    const first = await call('GET', '/things/abc', { token: 'reader' });
    const again = await call('GET', '/things/abc', {
      token: 'reader',
      headers: { 'if-none-match': first.headers.ETag },
    });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers.ETag).toBe(first.headers.ETag);
  });

  it('answers 200 with the new body when the tag is stale, and also for a weak or listed match', async () => {
    const current = (await call('GET', '/things/abc', { token: 'reader' })).headers.ETag;
    const stale = await call('GET', '/things/abc', {
      token: 'reader',
      headers: { 'if-none-match': '"old"' },
    });
    expect(stale.statusCode).toBe(200);
    expect(JSON.parse(stale.body)).toEqual({ id: 'abc' });
    for (const header of [`W/${current}`, `"old", ${current}`, '*']) {
      const res = await call('GET', '/things/abc', { token: 'reader', headers: { 'if-none-match': header } });
      expect(res.statusCode).toBe(304);
    }
  });

  it('never tags writes, errors or no-store answers, and checks the token before answering 304', async () => {
    const write = await call('POST', '/things', { token: 'admin', body: '{"name":"x"}' });
    expect(write.statusCode).toBe(200);
    expect(write.headers.ETag).toBeUndefined();
    const missing = await call('GET', '/nope', { token: 'admin', headers: { 'if-none-match': '*' } });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers.ETag).toBeUndefined();
    const minted = await call('GET', '/minted', { token: 'reader', headers: { 'if-none-match': '*' } });
    expect(minted.statusCode).toBe(200);
    expect(minted.headers.ETag).toBeUndefined();
    const anonymous = await call('GET', '/things/abc', { headers: { 'if-none-match': '*' } });
    expect(anonymous.statusCode).toBe(401);
  });

  it('etagMatches compares tags weakly and ignores spacing', () => {
    expect(etagMatches(' "a" ,W/"b"', '"b"')).toBe(true);
    expect(etagMatches('"a"', 'W/"a"')).toBe(true);
    expect(etagMatches('"a"', '"b"')).toBe(false);
  });
});
