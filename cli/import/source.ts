import { setTimeout as sleep } from 'node:timers/promises';
import { CliError } from '../config.js';
import { describeFetchError, jsonOrUndefined } from '../http.js';

/**
 * Reading the original coordinator's lists, a page at a time (`limit`/`offset`, the envelope `{count, next,
 * previous, results}`). Its `next` links are absolute URLs built from the host its requests arrived at, and say
 * `http://` when TLS ended in front of it, so only their query is followed: every page is asked of `--from` itself.
 */

export interface SourcePage {
  /** The list's `count` when this page was read (it grows while the original runs). */
  count: number;
  results: unknown[];
  /** Records of the list before this page. */
  offset: number;
}

export interface SourceOptions {
  /** The original's base URL, without a trailing slash. */
  base: string;
  token?: string;
  pageSize: number;
  fetch?: typeof fetch;
  /** Pauses before the retries of a page that failed (network error, 5xx). */
  retryDelaysMs?: readonly number[];
}

const DEFAULT_RETRIES = [500, 2000];

/** The page a `next` link points at, asked of the base URL (its path and query only). */
export function nextUrl(base: string, collection: string, next: string): string {
  const target = new URL(`${base}/${collection}`);
  // A relative link (which the original never sends, but a proxy in front of it might) is read against the base.
  for (const [k, v] of new URL(next, `${base}/`).searchParams) target.searchParams.set(k, v);
  return target.toString();
}

interface Envelope {
  count: number;
  next: string | null;
  results: unknown[];
}

async function readPage(
  o: SourceOptions,
  url: string,
): Promise<{ count: number; next: string | null; results: unknown[] }> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (o.token) headers.Authorization = `Bearer ${o.token}`;
  const delays = o.retryDelaysMs ?? DEFAULT_RETRIES;
  for (let attempt = 0; ; attempt++) {
    let failure: string;
    try {
      const res = await (o.fetch ?? fetch)(url, { headers });
      const text = await res.text();
      if (res.ok) return envelopeOf(url, jsonOrUndefined(text));
      const detail = (jsonOrUndefined(text) as { detail?: unknown } | undefined)?.detail;
      failure = `the original answered ${res.status} to GET ${url}${typeof detail === 'string' ? `: ${detail}` : ''}`;
      if (res.status === 401 || res.status === 403)
        failure += ' (give its token with --token or --token-file)';
      if (res.status < 500) throw new CliError(failure);
    } catch (err) {
      if (err instanceof CliError) throw err;
      failure = describeFetchError(url, err);
    }
    if (attempt >= delays.length) throw new CliError(failure);
    await sleep(delays[attempt]);
  }
}

function envelopeOf(url: string, body: unknown): { count: number; next: string | null; results: unknown[] } {
  const b = body as { count?: unknown; next?: unknown; results?: unknown } | undefined;
  if (
    !b ||
    typeof b.count !== 'number' ||
    !Array.isArray(b.results) ||
    !(b.next === null || typeof b.next === 'string')
  )
    throw new CliError(`GET ${url} did not answer a list envelope ({count, next, previous, results})`);
  return { count: b.count, next: b.next, results: b.results };
}

/**
 * Every page of one of the original's lists, newest first as it lists them, read one ahead of the caller (so at most
 * two pages are held at once, whatever the list's size). Ends at the first page without `next`.
 */
export async function* pagesOf(o: SourceOptions, collection: string): AsyncGenerator<SourcePage> {
  let url: string | null = `${o.base}/${collection}?limit=${o.pageSize}&offset=0`;
  let offset = 0;
  let ahead: ReturnType<typeof readPage> | null = readPage(o, url);
  while (ahead) {
    const page: Envelope = await ahead;
    const at = Number(new URL(url as string).searchParams.get('offset') ?? 0);
    url = page.next ? nextUrl(o.base, collection, page.next) : null;
    // A `next` that does not move forward would never end.
    if (url && Number(new URL(url).searchParams.get('offset') ?? 0) <= at)
      throw new CliError(`the original's ${collection} list links back to ${url}`);
    ahead = url ? readPage(o, url) : null;
    // Keep the prefetch's failure for when it is awaited.
    ahead?.catch(() => {});
    yield { count: page.count, results: page.results, offset };
    offset += page.results.length;
  }
}
