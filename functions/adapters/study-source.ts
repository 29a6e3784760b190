import { readFile } from 'node:fs/promises';
import type { StudyPages } from '../coordinator/ports.js';

/**
 * Reads a Kids First dataservice-compatible study listing: `{ results: [...], _links: { next } }`.
 * - http(s) URL: GET {source}/studies?limit=100, then follows `_links.next` (a path relative to the source's
 *   ORIGIN, e.g. /studies?limit=100&after=...) until it is absent. Every page, not only the first.
 * - anything else: a path to a JSON file of the same shape (one page).
 */
export type { StudyPages };

const MAX_PAGES = 10_000;

export function studySource(source: string, fetchImpl: typeof fetch = fetch, timeoutMs = 15_000): StudyPages {
  return /^https?:\/\//i.test(source) ? httpPages(source, fetchImpl, timeoutMs) : filePages(source);
}

function resultsOf(body: unknown, where: string): { results: unknown[]; next: string | null } {
  const b = body as { results?: unknown; _links?: { next?: unknown } } | null;
  if (!b || !Array.isArray(b.results)) throw new Error(`${where} is not a study listing (no results array)`);
  const next = typeof b._links?.next === 'string' && b._links.next ? b._links.next : null;
  return { results: b.results, next };
}

async function* httpPages(source: string, fetchImpl: typeof fetch, timeoutMs: number): StudyPages {
  const base = source.replace(/\/+$/, '');
  const origin = new URL(base).origin;
  let url: string | null = `${base}/studies?limit=100`;
  const seen = new Set<string>();
  for (let n = 0; url && n < MAX_PAGES; n++) {
    if (seen.has(url)) throw new Error(`study source loops back to ${url}`);
    seen.add(url);
    const res = await fetchImpl(url, {
      headers: { Accept: 'application/json' },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (res.status !== 200) throw new Error(`study source ${url} answered ${res.status}`);
    const page = resultsOf(await res.json(), url);
    yield page.results;
    url = page.next ? new URL(page.next, origin).toString() : null;
  }
}

async function* filePages(path: string): StudyPages {
  const body = JSON.parse(await readFile(path, 'utf8'));
  yield resultsOf(body, path).results;
}
