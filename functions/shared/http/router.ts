import type { Principal } from '../auth.js';
import type { Access, Method } from '../contract.js';
import { MethodNotAllowedError, NotFoundError } from '../errors.js';
import { LIMITS } from '../limits.js';
import type { Response } from './response.js';

/** What a route's handler receives: the request as app.ts builds it, after authentication. */
export interface Request {
  method: string;
  path: string;
  params: Record<string, string>;
  query: Record<string, string>;
  /** The raw query string, for URLs that must keep the caller's filters. */
  rawQuery: string;
  headers: Record<string, string>;
  /** Parsed JSON body (undefined when there is none). */
  body: unknown;
  principal: Principal;
  /** Scheme and host this request came in on, e.g. https://abc.execute-api.us-east-1.amazonaws.com */
  baseUrl: string;
  requestId: string;
  /** The caller's X-Request-Id, or one made up for this request: in every log line, answered as X-Request-Id. */
  correlationId: string;
}

export interface Route {
  /**
   * OPTIONS routes are for APIs that give OPTIONS a meaning of their own (GA4GH DRS answers its authorizations).
   * A CORS preflight is an OPTIONS too; it carries `Origin` and `Access-Control-Request-Method`.
   */
  method: Method;
  /** Path template with {name} parameters, e.g. /releases/{id}/publish */
  path: string;
  access: Access;
  /** A create that honours `Idempotency-Key` (shared/idempotency.ts); needs the app's `idempotency` store. */
  idempotent?: true;
  /** The route also takes a task service's own app client token (contract.ts, `serviceClients`). */
  serviceClients?: true;
  handle: (req: Request) => Promise<Response>;
}

/** What a handler module serves, readable from its `handler` (the route fuzzer derives its cases from it). */
export interface RouteInfo {
  method: Route['method'];
  path: string;
  access: Access;
  serviceClients?: true;
}

export interface CompiledRoute extends Route {
  regex: RegExp;
  names: string[];
}

export function compile(route: Route): CompiledRoute {
  const names: string[] = [];
  const pattern = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { ...route, regex: new RegExp(`^${pattern}/?$`), names };
}

/** The route a request takes. */
export interface RouteMatch {
  route: CompiledRoute;
  /** The path's parameter segments as sent, in the order of the route's `names` (decodeParams reads them). */
  segments: string[];
  /** The methods of every route matching the path: they share one Allow header. */
  allow: string[];
}

/**
 * The route for `method` at `path` (HEAD takes a GET route). A path no route matches is a 404; a method no route of
 * the path takes is a 405 whose Allow header lists the methods that are.
 */
export function matchRoute(routes: CompiledRoute[], method: string, path: string): RouteMatch {
  const matches = routes
    .map((r) => ({ r, m: r.regex.exec(path) }))
    .filter((x): x is { r: CompiledRoute; m: RegExpExecArray } => x.m !== null);
  if (matches.length === 0) throw new NotFoundError('No such resource');
  const allow = [...new Set(matches.map((x) => x.r.method))];
  const hit = matches.find((x) => x.r.method === method || (method === 'HEAD' && x.r.method === 'GET'));
  if (!hit) throw new MethodNotAllowedError(method, allow);
  return { route: hit.r, segments: hit.m.slice(1), allow };
}

/** A match's path parameters, decoded. */
export function decodeParams({
  route,
  segments,
}: Pick<RouteMatch, 'route' | 'segments'>): Record<string, string> {
  const params: Record<string, string> = {};
  route.names.forEach((n, i) => {
    params[n] = decodeSegment(segments[i]);
  });
  return params;
}

/**
 * A path segment as sent. A malformed percent-escape, or a segment longer than any id (LIMITS.pathSegmentBytes),
 * names nothing: a 404 like any unknown id, before any lookup.
 */
function decodeSegment(raw: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch (err) {
    throw new NotFoundError('No such resource', { cause: err });
  }
  if (Buffer.byteLength(decoded) > LIMITS.pathSegmentBytes) throw new NotFoundError('No such resource');
  return decoded;
}

/**
 * A route's path template filled with its decoded parameters, each encoded again (so '/' inside one stays inside).
 */
export function normalizedPath(template: string, params: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
}
