import type { Contracts, GroupDoc } from '../contract.js';

/**
 * The API's own description, on both APIs and without a token: the OpenAPI document and a reference page (Redoc,
 * served from the API itself, so it works offline and behind firewalls).
 */
/** The reference page's scripts: name under /docs/ -> the package file it is read from. */
export const DOCS_ASSETS: Record<string, string> = {
  'redoc.standalone.js': 'redoc/bundles/redoc.standalone.js',
};

/** Package files the docs functions read at run time, shipped beside their bundles (lib/bundling.ts). */
export const DOCS_PACKAGE_FILES = ['redoc/package.json', ...Object.values(DOCS_ASSETS)];

export const apiDocsRoutes = {
  getOpenApi: { method: 'GET', path: '/openapi.json', access: 'public' },
  getDocsPage: { method: 'GET', path: '/docs', access: 'public' },
  getDocsAsset: { method: 'GET', path: '/docs/{asset}', access: 'public' },
} as const satisfies Contracts;

export function apiDocsDocs(): GroupDoc<typeof apiDocsRoutes> {
  return {
    tag: { name: 'Documentation', description: 'This document and its reference page; no token needed.' },
    operations: {
      getOpenApi: {
        summary: 'This OpenAPI 3.1 document',
        description:
          'Generated from the route contracts (`npm run openapi`); `servers` names the URL the request came in on.',
        answers: { 200: { description: 'The OpenAPI document', content: 'application/json' } },
      },
      getDocsPage: {
        summary: 'The API reference page (Redoc)',
        answers: { 200: { description: 'An HTML page rendering /openapi.json', content: 'text/html' } },
      },
      getDocsAsset: {
        summary: 'A script of the reference page',
        params: { asset: 'The file name, e.g. redoc.standalone.js' },
        answers: { 200: { description: 'The script', content: 'text/javascript' } },
      },
    },
  };
}
