import { randomUUID } from 'node:crypto';
import { CliError } from './config.js';

/** "cannot reach <url>: ECONNREFUSED": what went wrong under fetch's generic "fetch failed". */
export function describeFetchError(url: string, err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const detail = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
  let where = url;
  try {
    where = new URL(url).origin;
  } catch {
    // keep the text as given
  }
  return `cannot reach ${where}: ${detail}`;
}

/**
 * Headers for a POST that creates something: a fresh Idempotency-Key, so a retried create is recognised by a
 * server that honours the key and is harmless to one that does not.
 */
export const creating = () => ({ 'Idempotency-Key': randomUUID() });

interface ApiResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** A body parsed as JSON, or undefined when it is not JSON (a proxy's HTML page, an S3 XML error). */
export function jsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The API's own message from its error body `{"error": {"code", "message", "fields"?}}`, fields included. */
export function apiMessage(status: number, body: unknown): string {
  const e = (body as { error?: { code?: string; message?: string; fields?: Record<string, string[]> } })
    ?.error;
  // The GA4GH DRS routes answer DRS's own error body, `{msg, status_code}`.
  const drs = (body as { msg?: unknown })?.msg;
  if (!e?.message) return typeof drs === 'string' ? drs : `HTTP ${status}`;
  const fields = e.fields
    ? ` (${Object.entries(e.fields)
        .map(([k, v]) => `${k}: ${v.join(', ')}`)
        .join('; ')})`
    : '';
  return `${e.message}${fields}`;
}

/** The body of a successful answer, or a CliError with the API's message; network failures become one line too. */
export async function must<T>(call: Promise<ApiResult<T>>, what: string): Promise<T> {
  let r: ApiResult<T>;
  try {
    r = await call;
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(describeFetchError(what, err));
  }
  if (r.response.ok) return r.data as T;
  throw new CliError(`${apiMessage(r.response.status, r.error)} (HTTP ${r.response.status})`);
}

/** The query of a list's `next` link (its cursor and every other parameter), to ask for the following page. */
export function nextQuery(next: string | null): Record<string, string> | undefined {
  if (!next) return undefined;
  return Object.fromEntries(new URL(next).searchParams);
}

export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

/**
 * One page, or with `all` every page (following the `next` links). The answer keeps the list envelope so `--json`
 * prints what the API sends.
 */
export async function listPages<T>(
  first: Record<string, unknown>,
  fetchPage: (query: Record<string, unknown>) => Promise<Page<T>>,
  all: boolean,
): Promise<Page<T>> {
  const page = await fetchPage(first);
  if (!all) return page;
  const results = [...page.results];
  let next = page.next;
  while (next) {
    const p = await fetchPage(nextQuery(next)!);
    results.push(...p.results);
    next = p.next;
  }
  return { count: page.count, next: null, previous: null, results };
}
