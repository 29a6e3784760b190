import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { apiDocsRoutes, DOCS_ASSETS } from './contracts/api-docs.js';
import { NotFoundError } from './errors.js';
import { ok } from './http/response.js';
import type { Route } from './http/router.js';

/**
 * GET /openapi.json, /docs and /docs/{asset}: an API's generated OpenAPI document (openapi/*.json, written by
 * `npm run openapi`) and a Redoc page rendering it. Every asset comes from this API: the page loads nothing from
 * elsewhere (its Content-Security-Policy says so), so it works offline and behind firewalls.
 *
 * Redoc's standalone script (about 1 MB) is not bundled: it is resolved as a package file at run time, which finds
 * node_modules/redoc in the repository, and, in a deployed function, the copy lib/bundling.ts ships beside the bundle
 * (DOCS_PACKAGE_FILES, lib/api-manifest.ts `shipped`). It is read once per container, on the first request for it.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  // Redoc styles itself with inline <style> elements and runs its search index in a worker made from a blob.
  "style-src 'self' 'unsafe-inline'",
  'worker-src blob:',
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
].join('; ');

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, baseUrl: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<redoc spec-url="${escapeHtml(`${baseUrl}/openapi.json`)}"></redoc>
<script src="${escapeHtml(`${baseUrl}/docs/redoc.standalone.js`)}"></script>
</body>
</html>
`;
}

const assets = new Map<string, Promise<string>>();
function asset(name: string): Promise<string> {
  // Own properties only: /docs/toString names nothing.
  const file = Object.hasOwn(DOCS_ASSETS, name) ? DOCS_ASSETS[name] : undefined;
  if (!file) throw new NotFoundError(`No asset ${name}`);
  let text = assets.get(name);
  if (!text) {
    text = readFile(createRequire(import.meta.url).resolve(file), 'utf8');
    assets.set(name, text);
    text.catch(() => assets.delete(name));
  }
  return text;
}

/** The routes of GET /openapi.json, /docs and /docs/{asset} for one API's document. */
export function apiDocsRoutesFor(document: { info: { title: string } }): Route[] {
  return [
    {
      ...apiDocsRoutes.getOpenApi,
      // The servers entry is the URL this request came in on, so the document works as-is against this deployment.
      handle: async (req) => ok({ ...document, servers: [{ url: req.baseUrl }] }),
    },
    {
      ...apiDocsRoutes.getDocsPage,
      handle: async (req) => ({
        status: 200,
        raw: { body: page(document.info.title, req.baseUrl), isBase64Encoded: false },
        headers: { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': CSP },
      }),
    },
    {
      ...apiDocsRoutes.getDocsAsset,
      handle: async (req) => ({
        status: 200,
        raw: { body: await asset(req.params.asset), isBase64Encoded: false },
        headers: {
          'Content-Type': 'text/javascript; charset=utf-8',
          'Cache-Control': 'public, max-age=3600',
        },
      }),
    },
  ];
}
