import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type StandInData, type StandInShape, standInData } from './data.js';

export * from './data.js';

/**
 * A stand-in for the original coordinator's REST API, over real HTTP on 127.0.0.1: its six list routes
 * (/task-services, /studies, /releases, /tasks, /release-notes, /events) and nothing else, as the original serves
 * them: LimitOffsetPagination (`limit`, default 10, no maximum; `offset`), the envelope `{count, next, previous,
 * results}` with absolute `next`/`previous` URLs built from the request's Host header and always `http://` (TLS ends
 * before the original), no trailing slash (`/releases/` is a 404), `Content-Type: application/json`, `Vary: Accept`
 * and `Allow`, DRF's error bodies, and a bearer token when one is set (403 without it, as DRF answers). Records come
 * from data.ts.
 *
 * For the import's tests: `cutAfter(n)` lets n more requests through, then resets every connection until `heal()`
 * (a network cut in the middle of a run); `data.addEvents(n)` and `data.endRelease(r, state)` are what a later run of
 * the original would find; `requests` counts what was asked.
 */
export interface StandIn {
  url: string;
  data: StandInData;
  requests: { path: string; query: string }[];
  cutAfter(n: number): void;
  heal(): void;
  close(): Promise<void>;
}

const COLLECTIONS = ['task-services', 'studies', 'releases', 'tasks', 'release-notes', 'events'] as const;

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, {
    'Content-Type': 'application/json',
    Vary: 'Accept',
    Allow: 'GET, POST, HEAD, OPTIONS',
  });
  res.end(JSON.stringify(body));
}

/** DRF's replace_query_param / remove_query_param on the absolute request URL. */
function link(req: IncomingMessage, url: URL, offset: number | null): string {
  const out = new URL(`http://${req.headers.host}${url.pathname}${url.search}`);
  if (offset === null || offset <= 0) out.searchParams.delete('offset');
  else out.searchParams.set('offset', String(offset));
  return out.toString();
}

export async function startStandIn(
  shape: StandInShape,
  opts: { token?: string; data?: StandInData } = {},
): Promise<StandIn> {
  const data = opts.data ?? standInData(shape);
  let budget = Number.POSITIVE_INFINITY;
  const requests: StandIn['requests'] = [];
  const server = createServer((req, res) => {
    if (budget <= 0) {
      req.socket.destroy();
      return;
    }
    budget--;
    const url = new URL(req.url ?? '/', 'http://stand-in');
    requests.push({ path: url.pathname, query: url.search });
    const collection = url.pathname.slice(1) as (typeof COLLECTIONS)[number];
    if (req.method !== 'GET' || !COLLECTIONS.includes(collection))
      return send(res, 404, { detail: 'Not found.' });
    if (opts.token && req.headers.authorization !== `Bearer ${opts.token}`)
      return send(res, 403, { detail: 'Authentication credentials were not provided.' });
    const limit = Number(url.searchParams.get('limit') ?? 10);
    const offset = Number(url.searchParams.get('offset') ?? 0);
    if (!Number.isInteger(limit) || limit < 1 || !Number.isInteger(offset) || offset < 0)
      return send(res, 400, { detail: 'Invalid limit or offset.' });
    const base = `http://${req.headers.host}`;
    const { count, page } = listOf(data, collection, base, offset, limit);
    send(res, 200, {
      count,
      next: offset + limit < count ? link(req, url, offset + limit) : null,
      previous: offset > 0 ? link(req, url, offset - limit) : null,
      results: page,
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    data,
    requests,
    cutAfter: (n) => {
      budget = n;
    },
    heal: () => {
      budget = Number.POSITIVE_INFINITY;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** One page, newest first (`-created_at`, the original's ordering of every list). */
function listOf(data: StandInData, collection: string, base: string, offset: number, limit: number) {
  if (collection === 'events') {
    const count = data.eventCount();
    const page = [];
    for (let k = offset; k < Math.min(count, offset + limit); k++) page.push(data.event(base, count - 1 - k));
    return { count, page };
  }
  const all =
    collection === 'task-services'
      ? data.services
      : collection === 'studies'
        ? data.studies
        : collection === 'releases'
          ? data.releases(base)
          : collection === 'tasks'
            ? data.tasks(base)
            : data.notes(base);
  const newestFirst = [...all].reverse();
  return { count: all.length, page: newestFirst.slice(offset, offset + limit) };
}
