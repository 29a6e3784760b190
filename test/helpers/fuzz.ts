import { createHash } from 'node:crypto';
import { type DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { expect } from 'vitest';
import type { RouteInfo } from '#functions/shared/http/router.js';
import type { ApiFunction } from '#lib/api-manifest.js';
import { loadHandlerModule } from '#local/handlers.js';
import { generateSigningKey } from '#local/jwt.js';
import type { TestIdp } from './auth.js';

/**
 * Property-based fuzzing of every route of an API (fast-check, fixed seed, bounded runs). Routes come from the
 * manifest (lib/api-manifest.ts) and each handler module's own `routeTable`, so a new route is fuzzed without
 * touching the tests. Every case sends a request built from arbitrary path segments, query strings, bodies and
 * credentials (valid, invalid and adversarial tokens) over real HTTP to the real handlers on DynamoDB Local (and
 * s3rver), and checks: no 5xx, every error has the documented body, and a refused request wrote nothing.
 */
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20261126);
/** Cases per route; FUZZ_RUNS raises it for a longer local run. */
export const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 40);

export interface FuzzRoute extends RouteInfo {
  entry: string;
}

/** Every route of every function of a manifest, checked to cover every manifest path. */
export async function routesOf(manifest: ApiFunction[]): Promise<FuzzRoute[]> {
  const out: FuzzRoute[] = [];
  for (const fn of manifest) {
    const mod = await loadHandlerModule<{ handler: { routeTable?: RouteInfo[] } }>(fn.entry);
    const table = mod.handler.routeTable;
    if (!table) throw new Error(`${fn.entry} does not expose its routeTable (httpApp)`);
    for (const path of fn.paths)
      if (!table.some((r) => r.path === path)) throw new Error(`${fn.entry} serves no route for ${path}`);
    // The handler serves exactly its route contracts, the ones the OpenAPI documents describe.
    const served = table.map((r) => `${r.method} ${r.path} ${r.access}`).sort();
    const declared = Object.values(fn.routes)
      .map((c) => `${c.method} ${c.path} ${c.access}`)
      .sort();
    if (served.join('\n') !== declared.join('\n'))
      throw new Error(
        `${fn.entry} serves ${served.join(', ')}; its contracts declare ${declared.join(', ')}`,
      );
    for (const r of table) if (fn.paths.includes(r.path)) out.push({ ...r, entry: fn.entry });
  }
  return out;
}

/** The credentials a case may present: valid roles, broken tokens, adversarial headers. */
export function credentials(idp: TestIdp, extra: Record<string, string> = {}) {
  const forger = generateSigningKey();
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const tokens: Record<string, string | null> = {
    none: null,
    admin: idp.admin(),
    service: idp.service(),
    reader: idp.reader(),
    boundService: idp.mint({ sub: 'x', roles: ['service'], extra: { client_id: 'client-a' } }),
    forged: idp.mint({ roles: ['admin'], key: forger }),
    expired: idp.mint({ roles: ['admin'], expiresIn: -120 }),
    coordinatorOwn: idp.mint({ sub: 'coordinator', roles: ['service'], audience: idp.taskServiceAudience }),
    wrongIssuer: idp.mint({ roles: ['admin'], issuer: 'https://evil.example.test' }),
    algNone: `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'x', roles: ['admin'], exp: 9e9 })}.`,
    oddClaims: idp.mint({
      roles: ['admin'],
      extra: { roles: { admin: true }, groups: 'x'.repeat(2000), sub: 42 },
    }),
    garbage: 'not.a.jwt',
    huge: 'a'.repeat(20_000),
    ...extra,
  };
  const names = Object.keys(tokens);
  const header = fc.oneof(
    {
      weight: 8,
      arbitrary: fc
        .constantFrom(...names)
        .map((n) => ({ name: n, value: tokens[n] ? `Bearer ${tokens[n]}` : undefined })),
    },
    {
      weight: 1,
      arbitrary: fc
        .oneof(
          fc.constantFrom(
            'Bearer',
            'Bearer  ',
            'Basic YTpi',
            'bearer x y',
            'Token sfdt_x',
            `Token ${'z'.repeat(300)}`,
          ),
          fc.string({ maxLength: 200 }),
        )
        .map((v) => ({ name: 'raw header', value: v })),
    },
  );
  return { tokens, header };
}

/** Path segments: ids that exist, well-formed unknown ids, and adversarial text (malformed escapes included). */
export function segment(known: string[]) {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...known) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        'RE_00000000',
        'TA_00000000',
        'TS_00000000',
        'SF_00000000',
        'FV_00000000',
        'SD_00000000',
        'EV_00000000',
        'RN_00000000',
      ),
    },
    { weight: 2, arbitrary: fc.string({ maxLength: 60 }).map((s) => encodeURIComponent(s) || 'x') },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '%',
        '%E0%A4%A',
        '%ZZ',
        '%C0%AF',
        '%00',
        '%2F',
        '..',
        '%2e%2e',
        '%F0%9F%98',
        '%25',
      ),
    },
    // Longer than any id, and just under the limit in multi-byte characters (keys near DynamoDB's size limits).
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        'x'.repeat(3000),
        'y'.repeat(513),
        encodeURIComponent('€'.repeat(170)),
        encodeURIComponent('😀'.repeat(128)),
      ),
    },
  );
}

const QUERY_KEYS = [
  'limit',
  'offset',
  'release',
  'study',
  'task',
  'task_service',
  'state',
  'enabled',
  'token',
  'user',
  'file',
  'x',
];

export const queryString = fc
  .dictionary(
    fc.constantFrom(...QUERY_KEYS),
    fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.integer().map(String),
      fc.constantFrom(
        '-1',
        '0',
        '101',
        '1e9',
        '1000001',
        'True',
        'NaN',
        'RE_00000000',
        '%',
        'x'.repeat(3000),
      ),
    ),
    { maxKeys: 4 },
  )
  .map((d) => new URLSearchParams(d).toString());

/** JSON values for body fields: plausible and hostile. */
export function fieldValue(known: string[]) {
  return fc.oneof(
    fc.string({ maxLength: 50 }),
    fc.constantFrom(...known),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom(...known)), { maxLength: 5 }),
    fc.jsonValue({ maxDepth: 3 }),
    fc.constantFrom(
      'x'.repeat(10_001),
      'release RE_00000000, version 1.0.0 changed from staged to published',
      'https://svc.invalid',
      'http://169.254.169.254/latest',
      'ftp://x',
      'http://user:pw@svc.invalid',
      '50%',
      'cancelled',
      'published',
      'a'.repeat(64),
    ),
  );
}

/** A request body: nothing, arbitrary JSON, objects of known field names, broken JSON, or an oversized body. */
export function body(fields: string[], known: string[]) {
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
    {
      weight: 6,
      arbitrary: fc
        .dictionary(fc.constantFrom(...fields), fieldValue(known), { maxKeys: 6 })
        .map((v) => JSON.stringify(v)),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom('{', '{"a":', 'null', '[]', '"x"', '\u0000', '{"name": "\ud800"}'),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        JSON.stringify({ description: 'd'.repeat(300 * 1024) }),
        'x'.repeat(270 * 1024),
      ),
    },
  );
}

/** The documented error body: exactly {error: {code, message, fields?}} with fields mapping names to messages. */
export function expectErrorBody(res: { status: number; body: any }, what: string): void {
  expect(res.body, what).toBeTypeOf('object');
  expect(Object.keys(res.body), what).toEqual(['error']);
  const e = res.body.error;
  expect(typeof e.code === 'string' && e.code.length > 0, `${what}: code`).toBe(true);
  expect(typeof e.message, `${what}: message`).toBe('string');
  const extra = Object.keys(e).filter((k) => !['code', 'message', 'fields'].includes(k));
  expect(extra, what).toEqual([]);
  if (e.fields !== undefined)
    for (const [k, v] of Object.entries(e.fields)) {
      expect(typeof k, what).toBe('string');
      expect(
        Array.isArray(v) && (v as unknown[]).every((m) => typeof m === 'string'),
        `${what}: fields.${k}`,
      ).toBe(true);
    }
}

/**
 * The GA4GH DRS error body, which the DRS routes answer instead of the project's (DRS 1.5's `Error` schema): exactly
 * {msg, status_code}, with `status_code` the response's own status.
 */
export function expectDrsErrorBody(res: { status: number; body: any }, what: string): void {
  expect(res.body, what).toBeTypeOf('object');
  expect(Object.keys(res.body).sort(), what).toEqual(['msg', 'status_code']);
  expect(typeof res.body.msg === 'string' && res.body.msg.length > 0, `${what}: msg`).toBe(true);
  expect(res.body.status_code, `${what}: status_code`).toBe(res.status);
}

/**
 * The manifest function a request path is routed to, matched as the gateway (and local/http-server.ts) matches
 * templates: each `{param}` is one segment. Undefined when no function serves it (the gateway's own 404).
 */
export function routedTo(manifest: ApiFunction[], path: string): ApiFunction | undefined {
  const pathname = new URL(path, 'http://fuzz').pathname;
  return manifest.find((fn) =>
    fn.paths.some((p) => new RegExp(`^${p.replace(/\{\w+\}/g, '[^/]+')}/?$`).test(pathname)),
  );
}

/** A fingerprint of every item of the tables: equal before and after a refused request, or something was written. */
export async function snapshot(doc: DynamoDBDocumentClient, tables: string[]): Promise<string> {
  const hash = createHash('sha256');
  for (const table of tables) {
    const items: string[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await doc.send(
        new ScanCommand({ TableName: table, ExclusiveStartKey: start, ConsistentRead: true }),
      );
      for (const item of out.Items ?? []) items.push(canonical(item));
      start = out.LastEvaluatedKey;
    } while (start);
    hash.update(`${table}:${items.length}\n${items.sort().join('\n')}\n`);
  }
  return hash.digest('hex');
}

/** JSON with object keys sorted at every level, so equal items give equal text. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v instanceof Set) return `set[${[...v].map(canonical).sort().join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'undefined';
}

/** Fills a path template with encoded segments. */
export const fill = (template: string, values: string[]) => {
  let i = 0;
  return template.replace(/\{\w+\}/g, () => values[i++] ?? 'x');
};
