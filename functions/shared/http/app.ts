import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { TokenVerifier } from '../auth.js';
import { type Clock, systemClock } from '../clock.js';
import { ValidationError } from '../errors.js';
import { type IdempotencyStore, idempotencyKeyOf, idempotent } from '../idempotency.js';
import { LIMITS } from '../limits.js';
import { appendLogKeys, type LogKeys, log, withLogContext } from '../log.js';
import { authenticate } from './authentication.js';
import { readBody } from './body.js';
import { type ErrorFacts, toErrorResponse } from './error-response.js';
import { conditional } from './etag.js';
import { type Response, render } from './response.js';
import {
  compile,
  decodeParams,
  matchRoute,
  normalizedPath,
  type Request,
  type Route,
  type RouteInfo,
} from './router.js';

export interface HttpAppOptions {
  routes: Route[];
  verifier: TokenVerifier;
  /** Fixed public base URL (e.g. a custom domain); otherwise derived from the request. */
  baseUrl?: string;
  /**
   * The error body, for an API whose standard prescribes its own (GA4GH DRS: `{msg, status_code}`). Every error of
   * this app goes through it: no route, wrong method, bad JSON, authentication, the routes' own errors and 500s.
   */
  errorBody?: (e: ErrorFacts) => unknown;
  /** Where the `idempotent` routes keep their keys. */
  idempotency?: IdempotencyStore;
  /** The idempotency keys' clock (expiry); tests pass one they control. */
  clock?: Clock;
}

/**
 * One Lambda entry point serving a group of routes. The chain is the same everywhere: route match (404/405 with
 * Allow, router.ts), body parsing (body.ts), authentication and authorization (authentication.ts), the route's
 * handler, and the error mapper last (error-response.ts). The returned handler carries its `routeTable`, so tests can
 * enumerate every route of every manifest entry. It is a plain async Lambda handler, with no middleware engine
 * around it (docs/architecture.md, "Why no middy").
 */
export function httpApp(options: HttpAppOptions) {
  const base = httpBase(options);
  const routeTable: RouteInfo[] = options.routes.map(({ method, path, access, serviceClients }) => ({
    method,
    path,
    access,
    ...(serviceClients ? { serviceClients } : {}),
  }));
  return Object.assign(base, { routeTable });
}

/** Scheme + host the caller used. API Gateway always sets x-forwarded-proto; the local adapter does too. */
export function baseUrlOf(event: APIGatewayProxyEventV2, override?: string): string {
  if (override) return override.replace(/\/$/, '');
  const proto = event.headers?.['x-forwarded-proto'] ?? 'https';
  const host = event.requestContext?.domainName ?? event.headers?.host ?? 'localhost';
  return `${proto}://${host}`;
}

function lowerHeaders(h: APIGatewayProxyEventV2['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h ?? {})) if (v !== undefined) out[k.toLowerCase()] = v;
  return out;
}

/**
 * A caller's correlation id is kept when it is a plausible id (1 to 128 characters of letters, digits and
 * `-_.:/+=`), so it cannot forge log structure or carry a payload into task services' logs; anything else is
 * replaced by a fresh UUID.
 */
export function correlationIdOf(header: string | undefined): string {
  return header && /^[A-Za-z0-9\-_.:/+=]{1,128}$/.test(header) ? header : randomUUID();
}

/** The log keys a path parameter names: /releases/{id} is a release, /tasks/{id} a task, and so on. */
const ID_KEYS: Record<string, keyof LogKeys> = {
  releases: 'release_id',
  tasks: 'task_id',
  'task-services': 'task_service_id',
};
const idKeysOf = (template: string, params: Record<string, string>): LogKeys => {
  const key = ID_KEYS[template.split('/')[1]];
  return key && params.id ? { [key]: params.id } : {};
};

/** The query string as one value per name, each within LIMITS.queryValue (a 400 naming the parameter). */
function queryOf(event: APIGatewayProxyEventV2): Record<string, string> {
  const query = Object.fromEntries(new URLSearchParams(event.rawQueryString ?? ''));
  for (const [name, value] of Object.entries(query))
    if (value.length > LIMITS.queryValue)
      throw ValidationError.field(name, `must be at most ${LIMITS.queryValue} characters`);
  return query;
}

function httpBase(options: HttpAppOptions) {
  const routes = options.routes.map(compile);
  for (const r of routes)
    if (r.idempotent && !options.idempotency)
      throw new Error(`${r.method} ${r.path} is idempotent but has no store`);
  return (event: APIGatewayProxyEventV2, context: Context): Promise<APIGatewayProxyStructuredResultV2> => {
    const requestId = context?.awsRequestId ?? event.requestContext?.requestId ?? 'local';
    const correlationId = correlationIdOf(lowerHeaders(event.headers)['x-request-id']);
    return withLogContext({ function_request_id: requestId, correlation_id: correlationId }, async () => {
      const started = performance.now();
      const out = await serve(event, context, requestId, correlationId);
      const method = (event.requestContext?.http?.method ?? 'GET').toUpperCase();
      // Writes are logged at info, reads at debug: reads are most of the traffic and API Gateway logs them anyway.
      (method === 'GET' || method === 'HEAD' ? log.debug : log.info)('request', {
        method,
        path: event.rawPath,
        status: out.statusCode,
        duration_ms: Math.round(performance.now() - started),
      });
      out.headers = { ...out.headers, 'X-Request-Id': correlationId };
      return out;
    });
  };

  async function serve(
    event: APIGatewayProxyEventV2,
    context: Context,
    requestId: string,
    correlationId: string,
  ): Promise<APIGatewayProxyStructuredResultV2> {
    const method = (event.requestContext?.http?.method ?? 'GET').toUpperCase();
    const path = event.rawPath ?? event.requestContext?.http?.path ?? '/';
    // A CORS preflight of the dashboard. Routes are `ANY <path>`, so API Gateway hands preflights to the function;
    // a bare 2xx is enough: the API's corsPreflight settings add the Access-Control-* headers for allowed origins
    // (and the local server answers preflights itself, as API Gateway would).
    if (method === 'OPTIONS' && lowerHeaders(event.headers)['access-control-request-method'])
      return { statusCode: 204, headers: { Vary: 'Origin' }, body: '' };
    let allow: string[] = [];
    let res: Response;
    try {
      const match = matchRoute(routes, method, path);
      allow = match.allow;
      const { route } = match;
      const params = decodeParams(match);
      appendLogKeys(idKeysOf(route.path, params));
      const headers = lowerHeaders(event.headers);
      const principal = await authenticate(route, headers, options.verifier);
      // Who: every later line of the request, its `request` line included, names the caller (docs/operations.md,
      // Audit).
      appendLogKeys({ actor: principal.sub, actor_client_id: principal.clientId });
      const req: Request = {
        method,
        path,
        params,
        query: queryOf(event),
        rawQuery: event.rawQueryString ?? '',
        headers,
        body: ['POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS'].includes(method) ? readBody(event) : undefined,
        principal,
        baseUrl: baseUrlOf(event, options.baseUrl),
        requestId,
        correlationId,
      };
      const key = route.idempotent ? idempotencyKeyOf(headers) : undefined;
      res =
        key && options.idempotency
          ? await idempotent(
              options.idempotency,
              {
                key,
                identity: `${principal.clientId ?? ''}|${principal.sub ?? ''}`,
                method,
                // The route's own spelling of the path: a trailing slash or a percent-encoded id is the same key.
                path: normalizedPath(route.path, params),
                body: req.body,
                remainingMs: context?.getRemainingTimeInMillis?.() ?? 30_000,
              },
              () => route.handle(req),
              options.clock ?? systemClock,
            )
          : await route.handle(req);
      // A create names what it made: its later lines (and the request line) carry the new id.
      if (method === 'POST' && res.status < 300 && !route.path.includes('{'))
        appendLogKeys(
          idKeysOf(`${route.path}/{id}`, { id: String((res.body as { item_id?: unknown })?.item_id ?? '') }),
        );
    } catch (err) {
      res = toErrorResponse(err, requestId, options.errorBody);
    }
    return render(res, allow, conditional(method, event.headers));
  }
}
