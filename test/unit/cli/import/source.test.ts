import { describe, expect, it } from 'vitest';
import { nextUrl, pagesOf } from '#cli/import/source.js';

/** A fetch that answers from a list of responses, recording the URLs and headers asked. */
function fakeFetch(answers: (Response | Error)[]) {
  const asked: { url: string; auth: string | null }[] = [];
  const f = (async (url: string, init?: RequestInit) => {
    asked.push({ url, auth: new Headers(init?.headers).get('authorization') });
    const a = answers.shift();
    if (!a) throw new Error('no more answers');
    if (a instanceof Error) throw a;
    return a;
  }) as typeof fetch;
  return { f, asked };
}
const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });

const collect = async <T>(it: AsyncIterable<T>) => {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
};

describe("reading the original's lists", () => {
  it('follows `next` by its query only, on the --from URL: the original builds it from its own host, over http', () => {
    expect(
      nextUrl('https://coord.example.org/api', 'events', 'http://10.0.3.4:8080/events?limit=100&offset=200'),
    ).toBe('https://coord.example.org/api/events?limit=100&offset=200');
    expect(nextUrl('https://coord.example.org/api', 'events', '/events?limit=100&offset=300')).toBe(
      'https://coord.example.org/api/events?limit=100&offset=300',
    );
  });

  it('reads every page with the bearer token, newest first as listed, until there is no next', async () => {
    const { f, asked } = fakeFetch([
      json({ count: 3, next: 'http://internal/tasks?limit=2&offset=2', previous: null, results: [1, 2] }),
      json({ count: 3, next: null, previous: 'http://internal/tasks?limit=2', results: [3] }),
    ]);
    const pages = await collect(
      pagesOf({ base: 'https://o.example.org', token: 't', pageSize: 2, fetch: f }, 'tasks'),
    );
    expect(pages).toEqual([
      { count: 3, results: [1, 2], offset: 0 },
      { count: 3, results: [3], offset: 2 },
    ]);
    expect(asked).toEqual([
      { url: 'https://o.example.org/tasks?limit=2&offset=0', auth: 'Bearer t' },
      { url: 'https://o.example.org/tasks?limit=2&offset=2', auth: 'Bearer t' },
    ]);
  });

  it('asks a page again after a network error or a 5xx, and gives up after the retries', async () => {
    const ok = json({ count: 1, next: null, previous: null, results: ['x'] });
    const retried = fakeFetch([new TypeError('fetch failed'), json({}, 502), ok]);
    const o = { base: 'https://o', pageSize: 10, retryDelaysMs: [1, 1] };
    expect(await collect(pagesOf({ ...o, fetch: retried.f }, 'events'))).toHaveLength(1);
    expect(retried.asked).toHaveLength(3);
    const down = fakeFetch([json({}, 503), json({}, 503), json({}, 503)]);
    await expect(collect(pagesOf({ ...o, fetch: down.f }, 'events'))).rejects.toThrow(/answered 503/);
  });

  it('stops at once on a 403, saying how to give the token, and on an answer that is not a list', async () => {
    const o = { base: 'https://o', pageSize: 10, retryDelaysMs: [1] };
    const refused = fakeFetch([json({ detail: 'Authentication credentials were not provided.' }, 403)]);
    await expect(collect(pagesOf({ ...o, fetch: refused.f }, 'events'))).rejects.toThrow(
      /answered 403 .*: Authentication credentials were not provided\. \(give its token with --token or --token-file\)/,
    );
    expect(refused.asked).toHaveLength(1);
    const html = fakeFetch([new Response('<html>', { status: 200 })]);
    await expect(collect(pagesOf({ ...o, fetch: html.f }, 'events'))).rejects.toThrow(
      /did not answer a list envelope/,
    );
  });

  it('refuses a `next` that does not move forward, which would never end', async () => {
    const { f } = fakeFetch([
      json({ count: 9, next: 'http://x/events?limit=2&offset=2', previous: null, results: [1, 2] }),
      json({ count: 9, next: 'http://x/events?limit=2&offset=2', previous: null, results: [3, 4] }),
    ]);
    await expect(collect(pagesOf({ base: 'https://o', pageSize: 2, fetch: f }, 'events'))).rejects.toThrow(
      /links back/,
    );
  });
});
