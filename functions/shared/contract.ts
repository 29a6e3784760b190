import type * as z from './zod.js';

/**
 * Route contracts: what each route of both APIs accepts, declared once. A handler spreads a contract into its route
 * and attaches `handle` (validating with the contract's own `query` and `body`); lib/api-manifest.ts derives its
 * paths and `bearerOnly` from the contracts; the OpenAPI generator (lib/openapi/) reads the same objects, plus the
 * documentation each contract module exports as a function (`…Docs`). That function (response schemas, summaries,
 * error statuses) is referenced by the generator only, so esbuild leaves it out of the Lambda bundles.
 */

/** What a route may demand of its caller (functions/shared/http/authentication.ts checks it). */
export type Access =
  | 'public' // no token needed (health, signed-URL downloads that check their own token)
  | 'read' // any valid token
  | 'admin'
  | 'service' // service or admin
  | 'optional'; // a bearer token is verified if present; the route decides

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE' | 'OPTIONS';

export interface RouteContract {
  method: Method;
  /** Path template with {name} parameters, e.g. /releases/{id}/publish */
  path: string;
  access: Access;
  /**
   * The route also takes a developer or signed-URL token (`?token=`, `Authorization: Token …`), which it checks
   * itself: the gateway's JWT authorizer must let it through.
   */
  tokens?: boolean;
  /**
   * A task-service callback that also takes the token of a task service's own app client (functions/shared/auth.ts,
   * verifyServiceClient): its client id is in no audience list, so the gateway's JWT authorizer must let this
   * method and path through (lib/http-api.ts), and the function checks the token.
   */
  serviceClients?: true;
  /**
   * A create that takes an `Idempotency-Key` header (functions/shared/idempotency.ts): a retry with the same key
   * and body answers the first result again.
   */
  idempotent?: true;
  /** The query string, validated with `parse(contract.query, req.query, 'query')`. */
  query?: z.ZodMiniObject;
  /** The JSON body, validated with `parse(contract.body, req.body)`. */
  body?: z.core.$ZodType;
}

/** A group of contracts by operation id (unique within its API document). */
export type Contracts = Record<string, RouteContract>;

/** The distinct path templates of some contracts, in order: a manifest entry's `paths`. */
export function pathsOf(...groups: Contracts[]): string[] {
  return [...new Set(groups.flatMap((g) => Object.values(g).map((c) => c.path)))];
}

/**
 * True when every route of these contracts needs a bearer JWT, so API Gateway's JWT authorizer may turn requests
 * without one away (a manifest entry's `bearerOnly`).
 */
export function bearerOnlyOf(...groups: Contracts[]): boolean {
  return groups.every((g) =>
    Object.values(g).every((c) => ['read', 'admin', 'service'].includes(c.access) && !c.tokens),
  );
}

/** The method and path of each route that takes task services' own app clients (`serviceClients`). */
export function serviceClientRoutesOf(...groups: Contracts[]): { method: Method; path: string }[] {
  return groups.flatMap((g) =>
    Object.values(g)
      .filter((c) => c.serviceClients)
      .map((c) => ({ method: c.method, path: c.path })),
  );
}

/**
 * An answer of a route, for the documents: a JSON body's schema, or a description of another kind of answer (no
 * body, a redirect, raw bytes).
 */
export interface AnswerDoc {
  description: string;
  /** The JSON body; none: an empty body (or `content` says what it is). */
  schema?: z.core.$ZodType;
  /** A body that is not JSON: its media type (the schema is then a string of bytes). */
  content?: string;
  /** Other media types the same answer comes in, as text, when the request asks for one (Accept, a query). */
  also?: string[];
  /** Response headers worth knowing: name -> description. */
  headers?: Record<string, string>;
}

/**
 * The documentation of one route: what it answers. The generator adds what every route of its kind may answer:
 * 400 (query values over the limit, unreadable bodies), 401/403 by access, 404 where the path names something,
 * 304 for JSON reads (ETag), and 500.
 */
export interface OperationDoc {
  summary: string;
  description?: string;
  /** Path parameters: name -> description. */
  params?: Record<string, string>;
  /** Query parameters the shared descriptions do not cover: name -> description. */
  queryDocs?: Record<string, string>;
  /** Successful (and other non-error) answers by status; a bare schema is a JSON body described by `summary`. */
  answers: Record<number, AnswerDoc | z.core.$ZodType>;
  /** Error statuses this route answers besides the generic ones, with what they mean. */
  errors?: Record<number, string>;
}

/** A contract module's documentation: its tag and one OperationDoc per contract, by the same operation id. */
export interface GroupDoc<C extends Contracts> {
  tag: { name: string; description: string };
  operations: { [K in keyof C]: OperationDoc };
}
