import { readFileSync } from 'node:fs';
import type { AnswerDoc, Contracts, GroupDoc, RouteContract } from '#functions/shared/contract.js';
import type { Describe } from '#functions/shared/contracts/schemas.js';
import { LIMITS } from '#functions/shared/limits.js';
import { DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET } from '#functions/shared/list.js';
import * as z from '#functions/shared/zod.js';

/**
 * Builds an API's OpenAPI 3.1 document from its route contracts (functions/<area>/contracts/): the requests from the
 * zod schemas the handlers validate with (zod's own JSON Schema output, input side), the answers from the schemas of
 * the contracts' documentation (output side), security from each route's access. Nothing here is written by hand
 * per route, and nothing here runs in a Lambda function: `npm run openapi` writes openapi/*.json, which the docs
 * functions serve.
 */

type Json = Record<string, unknown>;

export interface RouteGroup {
  routes: Contracts;
  docs: GroupDoc<any>;
  /** Error statuses every route of the group may answer, besides the generic ones. */
  errors?: Record<number, string>;
  /** The component the group's errors are bodies of (default Error; DRS has its own). */
  errorModel?: string;
  /**
   * False for routes that read no data store (the documents themselves). Every other route may answer DynamoDB's
   * throttling as a 503 and, when it writes, a transaction conflict as a 409, both with Retry-After
   * (functions/shared/http/error-response.ts, toErrorResponse), so the document says so.
   */
  store?: false;
}

export interface ApiDescription {
  /** openapi/<name>.json, openapi/types/<name>.ts */
  name: string;
  title: string;
  description: string;
  /** The API's URL on the local stack (`npm start`); the served document names the URL it was fetched from. */
  localUrl: string;
  /** The named schemas (components) and the route groups, built with the generator's `describe`. */
  groups: (describe: Describe) => { schemas: Record<string, z.core.$ZodType>; groups: RouteGroup[] };
}

/** Query parameters shared by many routes, described once. */
const QUERY_DOCS: Record<string, string> = {
  limit: `Page size: ${DEFAULT_LIMIT} by default, at most ${MAX_LIMIT} (more is a 400)`,
  offset:
    `Records to skip, at most ${MAX_OFFSET.toLocaleString('en-US')} (more is a 400); past the end, \`results\` is ` +
    'empty. The `next` and `previous` links carry a `cursor`, with which `offset` only numbers the page and may go ' +
    'deeper',
  cursor: 'Opaque position from a previous page’s `next` or `previous` link',
  release: 'Only records of this release (an RE_ id or its URL)',
  study: 'Only records of this study (an SD_ id, or its URL on the coordinator)',
  task_service: 'Only records of this task service (a TS_ id or its URL)',
  expand: 'Accepted for DRS clients; every object is a single blob, so there is nothing to expand',
};

const STATUS_TEXT: Record<number, string> = {
  400:
    'The request is invalid: a field, parameter or body that does not validate (`fields` names each), a body ' +
    `that is not JSON or over ${LIMITS.bodyBytes / 1024} KiB, or a query value over ${LIMITS.queryValue} characters`,
  401: 'No valid credential (missing, malformed, expired or foreign token)',
  403: 'The credential is valid but lacks the role (or study membership) the route needs',
  404: 'Nothing has this id (also answered for malformed ids)',
  405: 'The path exists; the method does not (Allow lists those that do)',
  409: 'The change does not fit the current state, or a concurrent change overtook it',
  413: 'The request is too large',
  422: 'The content does not match what was declared',
  500: 'Something unexpected failed; the message names only the request id',
  503:
    'A dependency is unavailable, e.g. the data store throttled the request past its retries (`busy`): send it ' +
    'again after the `Retry-After` seconds',
};

/**
 * Bounds the server enforces beyond a parameter's zod schema. `offset` parses up to LIMITS.offset, so that the links'
 * cursor pages can number deep pages, but a client's own offset is refused past MAX_OFFSET (assertOffset in
 * functions/shared/list.ts): the document gives clients the bound that applies to them.
 */
const QUERY_BOUNDS: Record<string, Json> = { offset: { maximum: MAX_OFFSET } };

/** zod's JSON Schema of a request part (what a client may send: defaults optional, coercions as input). */
function inputSchema(schema: z.core.$ZodType): Json {
  return toComponents(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' })) as Json;
}

/** zod bounds every integer by the safe-integer range; that says nothing a reader needs, so it is left out. */
const SAFE_BOUND = Number.MAX_SAFE_INTEGER;

/** Rewrites zod's `#/$defs/<id>` references to the document's components, where the registry put those schemas. */
function toComponents(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toComponents);
  if (value && typeof value === 'object') {
    const out: Json = {};
    for (const [k, v] of Object.entries(value)) {
      if (k === '$defs' || k === '$schema' || k === '$id') continue;
      if ((k === 'maximum' && v === SAFE_BOUND) || (k === 'minimum' && v === -SAFE_BOUND)) continue;
      out[k] =
        k === '$ref' && typeof v === 'string'
          ? v.replace(/^#\/\$defs\//, '#/components/schemas/')
          : toComponents(v);
    }
    return out;
  }
  return value;
}

const isZod = (v: unknown): v is z.core.$ZodType => typeof v === 'object' && v !== null && '_zod' in v;

function securityOf(c: RouteContract): Json[] {
  if (c.tokens) return [{ bearerAuth: [] }, { tokenQuery: [] }, { tokenHeader: [] }];
  if (c.access === 'public') return [];
  if (c.access === 'optional') return [{ bearerAuth: [] }, {}];
  return [{ bearerAuth: [] }];
}

const ACCESS_NOTE: Record<string, string> = {
  public: 'No token needed.',
  read: 'Any valid bearer token.',
  admin: 'Requires the `admin` role.',
  service: 'Requires the `service` or `admin` role.',
  optional: 'A bearer token is optional; what the caller may see depends on it.',
};

function accessNote(c: RouteContract): string {
  if (c.tokens)
    return c.access === 'public' && c.method === 'OPTIONS'
      ? ACCESS_NOTE.public
      : 'A bearer JWT, or a developer or signed-URL token (`?token=` or `Authorization: Token …`).';
  return ACCESS_NOTE[c.access];
}

const pathParams = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);

export function generateDocument(api: ApiDescription, version: string): Json {
  const registry = z.registry<{ id?: string; description?: string }>();
  const describe: Describe = (schema, description) => {
    registry.add(schema, { ...registry.get(schema), description });
    return schema;
  };
  const { schemas, groups } = api.groups(describe);
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { ...registry.get(schema), id });
  const named = new Map<z.core.$ZodType, string>(Object.entries(schemas).map(([id, s]) => [s, id]));

  /** A response body's schema: a $ref for a named schema, else zod's output with references into components. */
  const outputSchema = (schema: z.core.$ZodType): unknown => {
    const id = named.get(schema);
    if (id) return { $ref: `#/components/schemas/${id}` };
    return toComponents(z.toJSONSchema(schema, { io: 'output', metadata: registry, unrepresentable: 'any' }));
  };

  const components = z.toJSONSchema(registry, {
    io: 'output',
    uri: (id) => `#/components/schemas/${id}`,
    unrepresentable: 'any',
  }) as { schemas: Record<string, Json> };
  const errorResponses: Record<string, Json> = {};
  const errorRef = (model: string, status: number, description?: string): Json => {
    const name = `${model}${status}`;
    errorResponses[name] ??= {
      description: STATUS_TEXT[status] ?? `Error ${status}`,
      ...(status === 401 && model === 'Error'
        ? { headers: { 'WWW-Authenticate': { description: 'Bearer', schema: { type: 'string' } } } }
        : {}),
      content: { 'application/json': { schema: { $ref: `#/components/schemas/${model}` } } },
    };
    return { $ref: `#/components/responses/${name}`, ...(description ? { description } : {}) };
  };

  const paths: Record<string, Json> = {};
  const tags: Json[] = [];
  const operationIds = new Set<string>();
  for (const group of groups) {
    tags.push({ name: group.docs.tag.name, description: group.docs.tag.description });
    const model = group.errorModel ?? 'Error';
    const undocumented = Object.keys(group.routes).filter((id) => !group.docs.operations[id]);
    const orphans = Object.keys(group.docs.operations).filter((id) => !group.routes[id]);
    if (undocumented.length || orphans.length)
      throw new Error(
        `${api.name}: undocumented routes ${undocumented} / documentation of no route ${orphans}`,
      );
    for (const [operationId, contract] of Object.entries(group.routes)) {
      if (operationIds.has(operationId))
        throw new Error(`${api.name}: operation id ${operationId} used twice`);
      operationIds.add(operationId);
      const doc = group.docs.operations[operationId];
      const parameters: Json[] = pathParams(contract.path).map((name) => ({
        name,
        in: 'path',
        required: true,
        description: doc.params?.[name] ?? name,
        schema: { type: 'string', maxLength: LIMITS.pathSegmentBytes },
      }));
      if (contract.query) {
        const q = inputSchema(contract.query) as { properties?: Record<string, Json>; required?: string[] };
        for (const [name, schema] of Object.entries(q.properties ?? {}))
          parameters.push({
            name,
            in: 'query',
            required: q.required?.includes(name) ?? false,
            ...(doc.queryDocs?.[name] || QUERY_DOCS[name]
              ? { description: doc.queryDocs?.[name] ?? QUERY_DOCS[name] }
              : {}),
            schema: { ...schema, ...QUERY_BOUNDS[name] },
          });
      }
      if (contract.tokens && contract.method !== 'OPTIONS' && !parameters.some((p) => p.name === 'token'))
        parameters.push({
          name: 'token',
          in: 'query',
          required: false,
          description: 'A developer or signed-URL token, instead of a header (the tokenQuery scheme)',
          schema: { type: 'string' },
        });

      if (contract.idempotent)
        parameters.push({
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'Makes a retry safe: the same key with the same body, by the same caller within 24 hours, answers the ' +
            'first result again (marked `Idempotent-Replayed: true`) and writes nothing new',
          schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
        });

      const responses: Record<string, unknown> = {};
      const answers = Object.entries(doc.answers).map(([status, answer]): [string, AnswerDoc] => [
        status,
        isZod(answer) ? { description: doc.summary, schema: answer } : answer,
      ]);
      // A GET answering JSON gets an ETag, and a 304 to a matching If-None-Match (functions/shared/http/response.ts).
      const ok = answers.find(([status]) => status === '200')?.[1];
      const jsonRead =
        contract.method === 'GET' && !!ok && (!!ok.schema || ok.content === 'application/json');
      for (const [status, a] of answers) {
        const headers = a.headers
          ? Object.fromEntries(
              Object.entries(a.headers).map(([h, d]) => [h, { description: d, schema: { type: 'string' } }]),
            )
          : undefined;
        let content: Json | undefined;
        if (a.schema) content = { 'application/json': { schema: outputSchema(a.schema) } };
        else if (a.content)
          content = {
            [a.content]: {
              schema: a.content === 'application/json' ? { type: 'object' } : { type: 'string' },
            },
          };
        for (const media of a.also ?? []) content = { ...content, [media]: { schema: { type: 'string' } } };
        const replayed =
          contract.idempotent && status.startsWith('2')
            ? {
                'Idempotent-Replayed': {
                  description: '`true` when this answer repeats the first one for the same Idempotency-Key',
                  schema: { type: 'string', enum: ['true'] },
                },
              }
            : undefined;
        const allHeaders = headers || replayed ? { ...headers, ...replayed } : undefined;
        responses[status] = {
          description: a.description,
          ...(jsonRead && status === '200'
            ? {
                headers: {
                  ETag: { description: 'Strong validator of the body', schema: { type: 'string' } },
                  ...allHeaders,
                },
              }
            : allHeaders
              ? { headers: allHeaders }
              : {}),
          ...(content ? { content } : {}),
        };
      }
      if (jsonRead)
        responses['304'] = {
          description: 'Not modified: If-None-Match named the current ETag (the body is empty)',
        };
      const errors: Record<number, string | undefined> = { 400: undefined };
      if (contract.access !== 'public' || contract.tokens) errors[401] = undefined;
      if (['admin', 'service'].includes(contract.access)) errors[403] = undefined;
      if (pathParams(contract.path).length) errors[404] = undefined;
      if (contract.idempotent) {
        errors[409] = 'A request with this Idempotency-Key is still running (Retry-After says when to retry)';
        errors[422] = 'This Idempotency-Key was used with a different body';
      }
      if (group.store !== false) {
        if (!['GET', 'HEAD', 'OPTIONS'].includes(contract.method) && !(409 in errors))
          errors[409] = undefined;
        if (!(503 in errors)) errors[503] = undefined;
      }
      Object.assign(errors, group.errors, doc.errors);
      errors[500] = undefined;
      for (const [status, description] of Object.entries(errors)) {
        if (responses[status]) continue;
        responses[status] = errorRef(model, Number(status), description);
      }

      const body = contract.body;
      const operation: Json = {
        operationId,
        tags: [group.docs.tag.name],
        summary: doc.summary,
        description: [doc.description, accessNote(contract)].filter(Boolean).join('\n\n'),
        security: securityOf(contract),
        ...(parameters.length ? { parameters } : {}),
        ...(body
          ? {
              requestBody: {
                // httpApp validates a missing body as `{}`: the body is optional when that passes.
                required: !z.safeParse(body, {}).success,
                content: { 'application/json': { schema: inputSchema(body) } },
              },
            }
          : {}),
        responses,
      };
      paths[contract.path] = { ...paths[contract.path], [contract.method.toLowerCase()]: operation };
    }
  }

  const used = new Set(
    Object.values(paths).flatMap((item) =>
      Object.values(item).flatMap((op) => ((op as Json).security as Json[]).flatMap((r) => Object.keys(r))),
    ),
  );
  const componentSchemas: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(components.schemas))
    componentSchemas[id] = toComponents(schema) as Json;
  return {
    openapi: '3.1.0',
    info: { title: api.title, version, description: api.description },
    servers: [
      {
        url: api.localUrl,
        description: 'The local stack (npm start); the served document names its own URL',
      },
    ],
    tags,
    paths,
    components: {
      schemas: componentSchemas,
      responses: Object.fromEntries(Object.entries(errorResponses).sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: Object.fromEntries(
        Object.entries(SECURITY_SCHEMES).filter(([name]) => used.has(name)),
      ),
    },
  };
}

/** Every way in: the bearer JWT, and the developer / signed-URL tokens downloads and DRS also take. */
const SECURITY_SCHEMES: Record<string, Json> = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'A JWT of the configured issuer (locally `POST /dev/tokens` or `/oauth/token` of the identity ' +
      'provider). Roles come from its roles, cognito:groups or scope claims. DRS routes also take a ' +
      'developer token this way (`Bearer sfdt_…`).',
  },
  tokenQuery: {
    type: 'apiKey',
    in: 'query',
    name: 'token',
    description: 'A developer token or a single-use signed-URL token, as `?token=…`.',
  },
  tokenHeader: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description: 'A developer or signed-URL token as `Authorization: Token <token>`.',
  },
};

/** The package version, for `info.version`. */
export function packageVersion(): string {
  return JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;
}

/** Serialized as committed: two-space JSON and a final newline, so `npm run format` leaves it alone. */
export const documentText = (doc: unknown) => `${JSON.stringify(doc, null, 2)}\n`;
