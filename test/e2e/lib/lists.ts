import { expect } from 'vitest';
import { type CallOptions, call, type Res, show } from './http.js';

/**
 * The list envelope of both APIs: {count, next, previous, results}. Pages are reached only by following `next`,
 * never by building offsets, so these checks hold whatever a `next` link carries (offsets or opaque cursors).
 */
export function expectEnvelope(res: Res, limit?: number): void {
  expect(res.status, show(res)).toBe(200);
  const body = res.body;
  expect(Object.keys(body).sort()).toEqual(expect.arrayContaining(['count', 'next', 'previous', 'results']));
  expect(Number.isInteger(body.count) && body.count >= 0, `count ${body.count}`).toBe(true);
  expect(Array.isArray(body.results)).toBe(true);
  if (limit !== undefined) expect(body.results.length).toBeLessThanOrEqual(limit);
  for (const link of [body.next, body.previous]) {
    if (link === null) continue;
    expect(typeof link).toBe('string');
    expect(new URL(link).protocol).toMatch(/^https?:$/);
  }
  // A page that does not hold everything links on; the last one does not.
  if (body.next === null && body.previous === null) expect(body.results.length).toBe(body.count);
}

export interface Walk {
  pages: Res[];
  results: any[];
}

/**
 * Follows `next` from `url` until it is null (or `maxPages`): every page is an envelope, every page after the first
 * links back, each `next` stays on the same API path, and `keep` holds for every record of every page (a filter
 * that `next` must keep).
 */
export async function walk(
  url: string,
  opts: CallOptions & { maxPages?: number; keep?: (record: any) => boolean; limit?: number } = {},
): Promise<Walk> {
  const pages: Res[] = [];
  const results: any[] = [];
  const first = new URL(url);
  let next: string | null = url;
  while (next && pages.length < (opts.maxPages ?? 100)) {
    const res = await call('GET', next, opts);
    expectEnvelope(res, opts.limit);
    if (pages.length > 0) expect(res.body.previous, `page ${pages.length + 1} of ${url}`).not.toBeNull();
    for (const r of res.body.results)
      if (opts.keep)
        expect(opts.keep(r), `a record of ${next} breaks the filter: ${JSON.stringify(r)}`).toBe(true);
    pages.push(res);
    results.push(...res.body.results);
    next = res.body.next;
    if (next) expect(new URL(next).pathname).toBe(first.pathname);
  }
  return { pages, results };
}
