import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAX_OFFSET } from '#functions/shared/list.js';
import { COORDINATOR_API, FILES_API } from '#lib/api-manifest.js';
import { API_DESCRIPTIONS } from '#lib/openapi/apis.js';
import { documentText, generateDocument, packageVersion } from '#lib/openapi/generate.js';
import { typesOf } from '#lib/openapi/types.js';

/**
 * The committed documents (openapi/*.json) and client types (openapi/types/*.ts) are exactly what `npm run openapi`
 * makes from the route contracts today, and they describe exactly the routes lib/api-manifest.ts deploys.
 *
 * @covers openapi/
 */
const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
const manifests = { coordinator: COORDINATOR_API, files: FILES_API } as Record<
  string,
  typeof COORDINATOR_API
>;

describe.each(API_DESCRIPTIONS)('the $name API document', (api) => {
  const doc = generateDocument(api, packageVersion()) as {
    paths: Record<string, Record<string, { operationId: string; security: unknown[] }>>;
  };

  it('is committed as generated (run npm run openapi after changing a route contract)', () => {
    expect(read(`openapi/${api.name}.json`)).toBe(documentText(doc));
  });

  it('has committed client types generated from it (run npm run openapi)', async () => {
    expect(read(`openapi/types/${api.name}.ts`)).toBe(await typesOf(doc));
  }, 60_000);

  it(`gives every list's offset the server's own maximum, ${MAX_OFFSET} (deeper without a cursor is a 400)`, () => {
    const offsets = Object.values(doc.paths).flatMap((item) =>
      Object.values(item).flatMap((op) =>
        ((op as { parameters?: { name: string; schema: { maximum?: number } }[] }).parameters ?? []).filter(
          (p) => p.name === 'offset',
        ),
      ),
    );
    expect(offsets.length).toBeGreaterThan(0);
    for (const p of offsets) expect(p.schema.maximum).toBe(MAX_OFFSET);
  });

  it('describes every route the manifest deploys, and no other', () => {
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => `${method.toUpperCase()} ${path} ${op.operationId}`),
    );
    const deployed = manifests[api.name].flatMap((fn) =>
      Object.entries(fn.routes).map(([id, c]) => `${c.method} ${c.path} ${id}`),
    );
    expect([...new Set(deployed)].sort()).toEqual(documented.sort());
  });

  it('lets the gateway authorizer guard exactly the entries whose every route needs a bearer JWT', () => {
    for (const fn of manifests[api.name]) {
      const bearerOnly = Object.values(fn.routes).every(
        (c) => ['read', 'admin', 'service'].includes(c.access) && !('tokens' in c && c.tokens),
      );
      expect(fn.bearerOnly, fn.name).toBe(bearerOnly);
      for (const path of fn.paths) {
        const ops = Object.values(doc.paths[path]);
        // An open gateway route is either documented without security, or takes tokens the gateway cannot check.
        if (fn.bearerOnly)
          for (const op of ops) expect(op.security, `${fn.name} ${path}`).toEqual([{ bearerAuth: [] }]);
      }
    }
  });
});

describe('the documentation routes', () => {
  it('are bearer-free on both APIs: no JWT authorizer guards /openapi.json or /docs', () => {
    for (const manifest of [COORDINATOR_API, FILES_API]) {
      const docs = manifest.filter((fn) => fn.paths.includes('/openapi.json'));
      expect(docs).toHaveLength(1);
      expect(docs[0].bearerOnly).toBe(false);
      expect(docs[0].paths.sort()).toEqual(['/docs', '/docs/{asset}', '/openapi.json']);
    }
  });
});
