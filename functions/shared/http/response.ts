import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { type Conditional, etagMatches, etagOf } from './etag.js';

/** What a route answers; app.ts renders it as API Gateway's result. */
export interface Response {
  status: number;
  /** Serialized as JSON unless `raw` is set. `undefined` means an empty body. */
  body?: unknown;
  raw?: { body: string; isBase64Encoded: boolean };
  headers?: Record<string, string>;
}

export const ok = (body: unknown, headers?: Record<string, string>): Response => ({
  status: 200,
  body,
  headers,
});
export const empty = (): Response => ({ status: 200 });

/**
 * A response as API Gateway's result: JSON with `Vary: Accept`, the path's Allow header, and for a successful read
 * an ETag (a 304 without a body when the caller's If-None-Match holds it).
 */
export function render(res: Response, allow: string[], cond: Conditional): APIGatewayProxyStructuredResultV2 {
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    Vary: 'Accept',
    ...(allow.length ? { Allow: allow.join(', ') } : {}),
    ...res.headers,
  };
  if (res.raw)
    return { statusCode: res.status, headers, body: res.raw.body, isBase64Encoded: res.raw.isBase64Encoded };
  const body = res.body === undefined ? '' : JSON.stringify(res.body);
  // Only successful reads get a validator; an answer the route marked no-store (a freshly minted signed URL) is
  // different on every call, so a tag would never match.
  const noStore = /no-store/i.test(headers['Cache-Control'] ?? '');
  if (cond.read && res.status === 200 && res.body !== undefined && !noStore) {
    headers.ETag = etagOf(body);
    if (cond.ifNoneMatch && etagMatches(cond.ifNoneMatch, headers.ETag))
      return { statusCode: 304, headers, body: '' };
  }
  return { statusCode: res.status, headers, body };
}
