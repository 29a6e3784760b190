import { apiDocsRoutesFor } from '#functions/shared/api-docs.js';
import { httpApp } from '#functions/shared/http/app.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import document from '#openapi/coordinator.json' with { type: 'json' };

/** GET /openapi.json, /docs and /docs/{asset} of the coordinator API: no token needed. */
const { env, verifier } = httpRuntime();

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  routes: apiDocsRoutesFor(document),
});
