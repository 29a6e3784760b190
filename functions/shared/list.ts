import { ValidationError } from './errors.js';
import { type IdPrefix, idPattern } from './ids.js';
import { LIMITS } from './limits.js';
import * as z from './zod.js';

/** Documented page-size bounds. A limit above MAX_LIMIT is refused with a 400 (docs/api.md, Lists). */
export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;
/**
 * The deepest raw `offset` a list accepts without a cursor (docs/api.md). Skipping costs one read per skipped item,
 * so deeper pages are reached through the `next` / `previous` links, whose cursor makes every page cost one page.
 */
export const MAX_OFFSET = 10_000;

/**
 * A position in a newest-first list: the sort key of the last item of the page before (`after`, for `next`) or of
 * the first item of the page after (`before`, for `previous`). Sort keys are `<created_at>#<id>`, unique per list.
 */
export type Position = { after: string } | { before: string };

/** A record's sort key in the newest-first lists: `<created_at>#<id>` (the repositories key their lists by it). */
export const listSortKey = (createdAt: string, id: string) => `${createdAt}#${id}`;

const CURSOR_MAX = 1024;
const positionSchema = z.union([
  z.strictObject({ v: z.literal(1), a: z.string().check(z.minLength(1), z.maxLength(512)) }),
  z.strictObject({ v: z.literal(1), b: z.string().check(z.minLength(1), z.maxLength(512)) }),
]);

/** The opaque cursor of a link: base64url of a small versioned JSON position. */
export function encodeCursor(p: Position): string {
  const body = 'after' in p ? { v: 1, a: p.after } : { v: 1, b: p.before };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

/** Decodes a cursor; anything that is not one of ours (forged, truncated, another format) is null. */
export function decodeCursor(raw: string): Position | null {
  if (raw.length > CURSOR_MAX || !/^[A-Za-z0-9_-]+$/.test(raw)) return null;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  const parsed = z.safeParse(positionSchema, json);
  if (!parsed.success) return null;
  return 'a' in parsed.data ? { after: parsed.data.a } : { before: parsed.data.b };
}

const cursorQuery = z.pipe(
  z.string(),
  z.transform((raw, ctx) => {
    const p = decodeCursor(raw);
    if (!p) {
      ctx.issues.push({
        code: 'custom',
        input: raw,
        message: 'is not a cursor from a next or previous link',
      });
      return z.NEVER;
    }
    return p;
  }),
);

/**
 * The paging parameters of every list. `offset` is the position of the page's first item; with a `cursor` (from a
 * `next` / `previous` link) it only labels the page and the cursor says where the page starts, so it may be deep.
 */
export const pageQuery = {
  limit: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(MAX_LIMIT)), DEFAULT_LIMIT),
  offset: z._default(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(LIMITS.offset)), 0),
  cursor: z.optional(cursorQuery),
};
export interface Page {
  limit: number;
  offset: number;
  cursor?: Position;
  /**
   * Filled in by the list query that served the page: the sort keys of its first and last item, from which
   * envelope() builds the cursors of the next and previous links. Handlers only pass the page along.
   */
  seen?: { first: string; last: string };
}

/** A raw offset deeper than MAX_OFFSET (no cursor) is a 400 that points to the links. */
export function assertOffset(page: Page): void {
  if (!page.cursor && page.offset > MAX_OFFSET)
    throw ValidationError.field(
      'offset',
      `must be at most ${MAX_OFFSET} without a cursor; follow the "next" links (they carry a cursor) to read further`,
    );
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
  const link = (offset: number, position?: Position) => {
    const q = new URLSearchParams(rawQuery);
    q.delete('cursor');
    q.set('limit', String(page.limit));
    q.set('offset', String(offset));
    if (position) q.set('cursor', encodeCursor(position));
    return `${baseUrl}${path}?${q.toString()}`;
  };
  const seen = results.length ? page.seen : undefined;
  const nextOffset = page.offset + page.limit;
  const next = nextOffset < count ? link(nextOffset, seen ? { after: seen.last } : undefined) : null;
  let previous: string | null = null;
  if (page.offset > 0) {
    const back = page.offset - page.limit;
    // The first page needs no cursor; a page in the middle starts right before this page's first item.
    previous =
      back > 0 && seen
        ? link(back, { before: seen.first })
        : link(Math.max(0, Math.min(back, count - page.limit)));
  }
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
