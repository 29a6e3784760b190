import document from '../../../openapi/coordinator.json' with { type: 'json' };
import { apiDocsRoutesFor } from '../../shared/api-docs.js';
import { httpApp } from '../../shared/http.js';
import { httpRuntime } from '../../shared/runtime.js';

/** GET /openapi.json, /docs and /docs/{asset} of the coordinator API: no token needed. */
const { env, verifier } = httpRuntime();

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  routes: apiDocsRoutesFor(document),
});
