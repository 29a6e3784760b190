import autocannon from 'autocannon';

export interface LoadResult {
  /** Completed requests per second over the whole run. */
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  /** Connection errors, timeouts and non-2xx answers together. */
  failures: number;
  statusCodes: Record<string, number>;
}

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  seconds: number;
}

/** Drives one URL with autocannon (programmatic API), `connections` keep-alive connections for `seconds`. */
export async function httpLoad(opts: LoadOptions): Promise<LoadResult> {
  const r = await autocannon({
    url: opts.url,
    method: opts.method ?? 'GET',
    headers: opts.headers,
    body: opts.body,
    connections: opts.connections,
    duration: opts.seconds,
    timeout: 10,
  });
  const requests = r.requests.total;
  return {
    rps: requests / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests,
    failures: r.errors + r.timeouts + r.non2xx,
    statusCodes: Object.fromEntries(Object.entries(r.statusCodeStats).map(([k, v]) => [k, v.count])),
  };
}
