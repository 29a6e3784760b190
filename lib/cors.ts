/**
 * Cross-origin rules of both HTTP APIs, for browsers on the dashboard's origin. Plain data: the CDK HttpApis set
 * them as `corsPreflight` (API Gateway then answers preflights and adds the headers itself) and the local server
 * (local/http-server.ts) applies the same rules, so the handlers never see CORS.
 *
 * No credentials mode: the dashboard sends a bearer token, never cookies.
 */
export const API_CORS = {
  allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
  /**
   * Bearer tokens, JSON bodies, conditional polling, the create requests' idempotency key and a caller's correlation
   * id.
   */
  allowHeaders: ['authorization', 'content-type', 'if-none-match', 'idempotency-key', 'x-request-id'],
  /**
   * ETag for conditional polling; Location for redirects a script may want to follow itself; whether an answer was
   * replayed for an idempotency key; the correlation id of the request.
   */
  exposeHeaders: ['etag', 'location', 'idempotent-replayed', 'x-request-id'],
  /** Seconds a browser may reuse a preflight answer (Chromium caps it at 2 hours). */
  maxAgeSeconds: 3600,
} as const;

/**
 * The headers a CORS-aware server adds for `origin`, or null when the origin is not allowed (then the browser
 * blocks the answer, as API Gateway does for an origin outside `allowOrigins`). `*` allows every origin.
 */
export function corsHeaders(origin: string | undefined, allowOrigins: readonly string[]) {
  if (!origin) return null;
  if (!allowOrigins.includes('*') && !allowOrigins.includes(origin)) return null;
  return {
    'Access-Control-Allow-Origin': allowOrigins.includes('*') ? '*' : origin,
    'Access-Control-Expose-Headers': API_CORS.exposeHeaders.join(', '),
    Vary: 'Origin',
  };
}

/** The extra headers of a preflight answer for an allowed origin. */
export function preflightHeaders(): Record<string, string> {
  return {
    'Access-Control-Allow-Methods': API_CORS.allowMethods.join(', '),
    'Access-Control-Allow-Headers': API_CORS.allowHeaders.join(', '),
    'Access-Control-Max-Age': String(API_CORS.maxAgeSeconds),
  };
}
