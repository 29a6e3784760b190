import type { RuntimeConfig } from './config';

/**
 * The dashboard talks only to the two public APIs, with the signed-in user's bearer token. Errors arrive in the
 * APIs' one shape, {"error": {"code", "message", "fields"?}}, and become an ApiError.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: Record<string, string[]> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export type Service = 'coordinator' | 'files';

export interface Envelope<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  signal?: AbortSignal;
  /**
   * Creates carry a fresh random Idempotency-Key per user action: the APIs answer a repeated key with the first
   * answer (`Idempotent-Replayed: true`) instead of making a second release, task service, note or file.
   */
  create?: boolean;
}

/** A conditional read: 304 (unchanged, no body) or the new body with its ETag. */
export type Conditional<T> = { changed: false } | { changed: true; etag: string | null; data: T };

export interface Api {
  url(service: Service, path: string): string;
  request<T>(service: Service, path: string, options?: RequestOptions): Promise<T>;
  /** GET with If-None-Match: the server answers 304 while the resource is unchanged. */
  conditionalGet<T>(url: string, etag: string | null, signal?: AbortSignal): Promise<Conditional<T>>;
}

async function errorOf(res: Response): Promise<ApiError> {
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  const e = (body as { error?: { code?: unknown; message?: unknown; fields?: unknown } } | undefined)?.error;
  if (e && typeof e.code === 'string' && typeof e.message === 'string')
    return new ApiError(res.status, e.code, e.message, (e.fields as Record<string, string[]>) ?? {});
  return new ApiError(res.status, 'http_error', `The server answered ${res.status}`);
}

export function createApi(
  config: RuntimeConfig,
  token: () => string | null,
  onUnauthorized: () => void,
): Api {
  const bases: Record<Service, string> = { coordinator: config.coordinatorUrl, files: config.filesUrl };
  const url = (service: Service, path: string) =>
    /^https?:\/\//.test(path) ? path : `${bases[service]}${path}`;

  const send = async (target: string, init: RequestInit, headers: Record<string, string>) => {
    const bearer = token();
    const res = await fetch(target, {
      ...init,
      // The app keeps its own validators; the browser cache must not answer for the server.
      cache: 'no-store',
      headers: { ...headers, ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}) },
    });
    if (res.status === 401) onUnauthorized();
    return res;
  };

  return {
    url,
    async request<T>(service: Service, path: string, options: RequestOptions = {}): Promise<T> {
      const headers: Record<string, string> = { Accept: 'application/json' };
      if (options.body !== undefined) headers['Content-Type'] = 'application/json';
      if (options.create) headers['Idempotency-Key'] = crypto.randomUUID();
      const res = await send(
        url(service, path),
        {
          method: options.method ?? 'GET',
          body: options.body === undefined ? undefined : JSON.stringify(options.body),
          signal: options.signal,
        },
        headers,
      );
      if (!res.ok) throw await errorOf(res);
      const text = await res.text();
      return (text ? JSON.parse(text) : undefined) as T;
    },
    async conditionalGet<T>(target: string, etag: string | null, signal?: AbortSignal) {
      const headers: Record<string, string> = { Accept: 'application/json' };
      if (etag) headers['If-None-Match'] = etag;
      const res = await send(target, { signal }, headers);
      if (res.status === 304) return { changed: false } as const;
      if (!res.ok) throw await errorOf(res);
      return { changed: true, etag: res.headers.get('ETag'), data: (await res.json()) as T } as const;
    },
  };
}

/** Every page of a list (the APIs cap a page at 100), following `next`. */
export async function listAll<T>(api: Api, service: Service, path: string, max = 2000): Promise<T[]> {
  const out: T[] = [];
  let next: string | null = api.url(service, `${path}${path.includes('?') ? '&' : '?'}limit=100`);
  while (next && out.length < max) {
    const page: Envelope<T> = await api.request<Envelope<T>>(service, next);
    out.push(...page.results);
    next = page.next;
  }
  return out;
}
