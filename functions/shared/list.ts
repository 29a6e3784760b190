import { type IdPrefix, idPattern } from './ids.js';
import { LIMITS } from './limits.js';
import * as z from './zod.js';

/** Documented page-size bounds. A limit above MAX_LIMIT is refused with a 400 (see README). */
export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;

export const pageQuery = {
  limit: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(MAX_LIMIT)), DEFAULT_LIMIT),
  offset: z._default(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(LIMITS.offset)), 0),
};
export interface Page {
  limit: number;
  offset: number;
}

export interface Envelope<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

/** The list envelope; next/previous are absolute URLs that keep every other query parameter. */
export function envelope<T>(
  baseUrl: string,
  path: string,
  rawQuery: string,
  page: Page,
  count: number,
  results: T[],
): Envelope<T> {
  const link = (offset: number) => {
    const q = new URLSearchParams(rawQuery);
    q.set('limit', String(page.limit));
    q.set('offset', String(offset));
    return `${baseUrl}${path}?${q.toString()}`;
  };
  const next = page.offset + page.limit < count ? link(page.offset + page.limit) : null;
  const previous =
    page.offset > 0 ? link(Math.max(0, Math.min(page.offset - page.limit, count - page.limit))) : null;
  return { count, next, previous, results };
}

/**
 * A reference to another record: requests may send the bare id or its absolute URL
 * ({base_url}/<collection>/<id>); either way the use case receives the bare id.
 */
export function ref(prefix: IdPrefix, collection: string) {
  const pattern = idPattern(prefix);
  return z
    .pipe(
      z.string().check(z.maxLength(LIMITS.url, `must be at most ${LIMITS.url} characters`)),
      z.transform((v) => {
        const m = new RegExp(`/${collection}/([^/?#]+)/?$`).exec(v);
        return m ? m[1] : v;
      }),
    )
    .check(
      z.refine((v) => pattern.test(v), { message: `must be a ${prefix}_ id or a /${collection}/<id> URL` }),
    );
}

/** Maps a bare id to its absolute URL in responses. */
export function urlOf(baseUrl: string, collection: string, id: string | null | undefined): string | null {
  return id ? `${baseUrl}/${collection}/${id}` : null;
}

/** Boolean query values as the spec writes them (True/False), plus true/false. */
export const boolQuery = z.pipe(
  z.enum(['True', 'False', 'true', 'false']),
  z.transform((v) => v.toLowerCase() === 'true'),
);
