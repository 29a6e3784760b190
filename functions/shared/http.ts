import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { ANONYMOUS, bearerToken, type Principal, type TokenVerifier } from './auth.js';
import { type Clock, systemClock } from './clock.js';
import type { Access, Method } from './contract.js';
import {
  type AppError,
  BadRequestError,
  BusyError,
  type ErrorCode,
  ForbiddenError,
  isAppError,
  MethodNotAllowedError,
  NotFoundError,
  RetryableConflictError,
  UnauthorizedError,
  ValidationError,
} from './errors.js';
import { type Conditional, conditional, etagMatches, etagOf } from './etag.js';
import { type IdempotencyStore, idempotencyKeyOf, idempotent } from './idempotency.js';
import { LIMITS } from './limits.js';
import { appendLogKeys, type LogKeys, log, withLogContext } from './log.js';
import { readableStack } from './stack-trace.js';
import * as z from './zod.js';

export type { Access } from './contract.js';
export { etagMatches, etagOf } from './etag.js';

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

export interface Response {
  status: number;
  /** Serialized as JSON unless `raw` is set. `undefined` means an empty body. */
  body?: unknown;
  raw?: { body: string; isBase64Encoded: boolean };
  headers?: Record<string, string>;
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

export const ok = (body: unknown, headers?: Record<string, string>): Response => ({
  status: 200,
  body,
  headers,
});
export const empty = (): Response => ({ status: 200 });

interface CompiledRoute extends Route {
  regex: RegExp;
  names: string[];
}

function compile(route: Route): CompiledRoute {
  const names: string[] = [];
  const pattern = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { ...route, regex: new RegExp(`^${pattern}/?$`), names };
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
 * Whether JSON text nests arrays and objects deeper than `max`, read in one pass over the text (brackets inside
 * strings do not count) without parsing it, so a body nested 100,000 deep costs no recursion anywhere.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

function parseBody(event: APIGatewayProxyEventV2): unknown {
  if (event.body === undefined || event.body === null || event.body === '') return undefined;
  const text = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
  if (text.trim() === '') return undefined;
  // Before anything parses or walks the body, whatever its size: a deeply nested one is refused as it is.
  if (nestsDeeperThan(text, LIMITS.bodyDepth))
    throw ValidationError.field(
      'body',
      `nests arrays and objects more than ${LIMITS.bodyDepth} levels deep; at most ${LIMITS.bodyDepth} are accepted`,
    );
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    if (Buffer.byteLength(text) > LIMITS.bodyBytes) throw oversizeBody(text, undefined);
    throw new BadRequestError('Request body is not valid JSON', { cause: err });
  }
  if (Buffer.byteLength(text) > LIMITS.bodyBytes) throw oversizeBody(text, parsed);
  return parsed;
}

/**
 * A body over LIMITS.bodyBytes is a 400 that names the field responsible: the top-level field whose JSON is the
 * largest (a 500 KB description names `description`), or `body` when the body is not a JSON object.
 */
function oversizeBody(text: string, parsed: unknown): ValidationError {
  const bytes = Buffer.byteLength(text);
  const rule = `the request body is ${bytes} bytes; at most ${LIMITS.bodyBytes} are accepted`;
  let field = 'body';
  if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
    let largest = -1;
    for (const [k, v] of Object.entries(parsed)) {
      const size = Buffer.byteLength(JSON.stringify(v) ?? '');
      if (size > largest) [field, largest] = [k, size];
    }
  }
  return new ValidationError(`Invalid ${field}: too large (${rule})`, { [field]: [`is too large: ${rule}`] });
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

/** What an error body is made of, whatever shape an API renders it in. */
export interface ErrorFacts {
  status: number;
  code: ErrorCode;
  message: string;
  fields?: Record<string, string[]>;
  /** Structured facts of the error (AppError.details), beside the message. */
  details?: Record<string, unknown>;
}

/** The project's error body: `{"error": {"code", "message", "fields"?, ...details}}`. */
export const standardErrorBody = (e: ErrorFacts) => ({
  error: { ...e.details, code: e.code, message: e.message, ...(e.fields ? { fields: e.fields } : {}) },
});

/**
 * DynamoDB's answers that pass with time, when they outlast the SDK's and the store's retries: throttling is a 503
 * and a transaction conflict a 409, both with `Retry-After`, so the caller sends the request again rather than
 * reading a 500 as a failure.
 */
function passesWithTime(err: unknown): AppError | null {
  const e = err as { name?: unknown; $retryable?: { throttling?: boolean } };
  if (!e || typeof e !== 'object') return null;
  const throttled =
    e.$retryable?.throttling === true ||
    ['ThrottlingException', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded'].includes(
      String(e.name),
    );
  if (throttled) return new BusyError('The data store is throttling requests; retry', 1, { cause: err });
  if (e.name === 'TransactionConflictException')
    return new RetryableConflictError('A concurrent change is in progress; retry', 1, { cause: err });
  return null;
}

/** Maps anything thrown to an HTTP response. Only AppErrors (4xx) expose their message. */
export function toErrorResponse(
  err: unknown,
  requestId: string,
  renderBody: (e: ErrorFacts) => unknown = standardErrorBody,
): Response {
  const later = isAppError(err) ? null : passesWithTime(err);
  if (later) {
    log.warn('answered retry-later', { requestId, status: later.status, error: String(err) });
    err = later;
  }
  if (isAppError(err)) {
    const facts = {
      status: err.status,
      code: err.code,
      message: err.message,
      fields: err.fields,
      details: err.details,
    };
    return { status: err.status, body: renderBody(facts), headers: err.headers };
  }
  log.error('unhandled error', { requestId, error: readableStack(err) });
  const facts: ErrorFacts = {
    status: 500,
    code: 'internal_error',
    message: `Internal server error (request ${requestId})`,
  };
  return { status: 500, body: renderBody(facts) };
}

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

/** What a handler module serves, readable from its `handler` (the route fuzzer derives its cases from it). */
export interface RouteInfo {
  method: Route['method'];
  path: string;
  access: Access;
  serviceClients?: true;
}

/**
 * One Lambda entry point serving a group of routes. The chain is the same everywhere: route match (404/405 with
 * Allow), body parsing, authentication, authorization, the route's handler, and the error mapper last. The
 * returned handler carries its `routeTable`, so tests can enumerate every route of every manifest entry. It is a
 * plain async Lambda handler, with no middleware engine around it (docs/architecture.md, "Why no middy").
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
      const matches = routes
        .map((r) => ({ r, m: r.regex.exec(path) }))
        .filter((x): x is { r: CompiledRoute; m: RegExpExecArray } => x.m !== null);
      if (matches.length === 0) throw new NotFoundError('No such resource');
      // All routes matching this path share one Allow header (the most specific template wins ties).
      allow = [...new Set(matches.map((x) => x.r.method))];
      const hit = matches.find((x) => x.r.method === method || (method === 'HEAD' && x.r.method === 'GET'));
      if (!hit) throw new MethodNotAllowedError(method, allow);
      const params: Record<string, string> = {};
      hit.r.names.forEach((n, i) => {
        params[n] = decodeSegment(hit.m[i + 1]);
      });
      appendLogKeys(idKeysOf(hit.r.path, params));
      const headers = lowerHeaders(event.headers);
      const principal = await authenticate(hit.r, headers, options.verifier);
      const query = Object.fromEntries(new URLSearchParams(event.rawQueryString ?? ''));
      for (const [name, value] of Object.entries(query))
        if (value.length > LIMITS.queryValue)
          throw ValidationError.field(name, `must be at most ${LIMITS.queryValue} characters`);
      const req: Request = {
        method,
        path,
        params,
        query,
        rawQuery: event.rawQueryString ?? '',
        headers,
        body: ['POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS'].includes(method) ? parseBody(event) : undefined,
        principal,
        baseUrl: baseUrlOf(event, options.baseUrl),
        requestId,
        correlationId,
      };
      const key = hit.r.idempotent ? idempotencyKeyOf(headers) : undefined;
      res =
        key && options.idempotency
          ? await idempotent(
              options.idempotency,
              {
                key,
                identity: `${principal.clientId ?? ''}|${principal.sub ?? ''}`,
                method,
                // The route's own spelling of the path: a trailing slash or a percent-encoded id is the same key.
                path: normalizedPath(hit.r.path, params),
                body: req.body,
                remainingMs: context?.getRemainingTimeInMillis?.() ?? 30_000,
              },
              () => hit.r.handle(req),
              options.clock ?? systemClock,
            )
          : await hit.r.handle(req);
      // A create names what it made: its later lines (and the request line) carry the new id.
      if (method === 'POST' && res.status < 300 && !hit.r.path.includes('{'))
        appendLogKeys(
          idKeysOf(`${hit.r.path}/{id}`, { id: String((res.body as { item_id?: unknown })?.item_id ?? '') }),
        );
    } catch (err) {
      res = toErrorResponse(err, requestId, options.errorBody);
    }
    return render(res, allow, conditional(method, event.headers));
  }
}

/** A route's path template filled with its decoded parameters (each encoded again, so '/' inside one stays inside). */
function normalizedPath(template: string, params: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
}

async function authenticate(
  route: Pick<Route, 'access' | 'serviceClients'>,
  headers: Record<string, string>,
  verifier: TokenVerifier,
) {
  const { access } = route;
  if (access === 'public') return ANONYMOUS;
  const token = bearerToken(headers.authorization);
  if (!token) {
    if (access === 'optional') return ANONYMOUS;
    throw new UnauthorizedError();
  }
  const principal = await verifyFor(route, token, verifier);
  if (access === 'admin' && !principal.isAdmin) throw new ForbiddenError('Requires the admin role');
  if (access === 'service' && !principal.isAdmin && !principal.isService)
    throw new ForbiddenError('Requires the service or admin role');
  return principal;
}

/**
 * The token's principal. A route that takes task services' own app clients (`serviceClients`) tries that rule only
 * for a token the audience rule refused, so every token accepted before is judged exactly as before.
 */
async function verifyFor(
  route: Pick<Route, 'serviceClients'>,
  token: string,
  verifier: TokenVerifier,
): Promise<Principal> {
  try {
    return await verifier.verify(token);
  } catch (err) {
    if (!route.serviceClients || !verifier.verifyServiceClient) throw err;
    return await verifier.verifyServiceClient(token).catch(() => {
      throw err;
    });
  }
}

function render(res: Response, allow: string[], cond: Conditional): APIGatewayProxyStructuredResultV2 {
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

/** The caller as the use cases judge writes: admin, or the identity its token acts as (auth.ts, clientId). */
export function actorOf(req: Pick<Request, 'principal'>): {
  isAdmin: boolean;
  identity: string | null;
  boundClientOnly?: boolean;
} {
  const { isAdmin, clientId, boundClientOnly } = req.principal;
  return { isAdmin, identity: clientId, ...(boundClientOnly ? { boundClientOnly } : {}) };
}

/** Validates input with zod; failures become a 400 that names each field. */
export function parse<S extends z.core.$ZodType>(schema: S, input: unknown, what = 'body'): z.output<S> {
  const result = z.safeParse(schema, input ?? (what === 'body' ? {} : input));
  if (result.success) return result.data;
  const fields: Record<string, string[]> = {};
  for (const issue of result.error.issues) {
    const key = issue.path.length ? issue.path.join('.') : what;
    const message =
      issue.code === 'unrecognized_keys' ? `unknown field(s): ${issue.keys.join(', ')}` : issue.message;
    fields[key] = [...(fields[key] ?? []), message];
  }
  throw new ValidationError(`Invalid ${what}: ${Object.keys(fields).join(', ')}`, fields, {
    cause: result.error,
  });
}
