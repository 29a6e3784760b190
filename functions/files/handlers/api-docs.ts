import document from '../../../openapi/files.json' with { type: 'json' };
import { apiDocsRoutesFor } from '../../shared/api-docs.js';
import { httpApp } from '../../shared/http.js';
import { httpRuntime } from '../../shared/runtime.js';

/** GET /openapi.json, /docs and /docs/{asset} of the study file service: no token needed. */
const { env, verifier } = httpRuntime();

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  routes: apiDocsRoutesFor(document),
});
