import { describe, expect, it } from 'vitest';
import { empty, ok, render } from '#functions/shared/http/response.js';

const write = { read: false };

describe('rendering a response', () => {
  it('answers JSON with Vary: Accept and the path’s Allow header, and the route’s own headers over them', () => {
    const res = render(ok({ a: 1 }, { Vary: 'Origin' }), ['GET', 'PATCH'], write);
    expect(res).toEqual({
      statusCode: 200,
      headers: { 'Content-Type': 'application/json', Vary: 'Origin', Allow: 'GET, PATCH' },
      body: '{"a":1}',
    });
  });

  it('answers an empty body for `empty`, and a raw body as it is', () => {
    expect(render(empty(), [], write)).toMatchObject({ statusCode: 200, body: '' });
    expect(render({ status: 200, raw: { body: 'AAEC', isBase64Encoded: true } }, [], write)).toMatchObject({
      body: 'AAEC',
      isBase64Encoded: true,
    });
  });
});
