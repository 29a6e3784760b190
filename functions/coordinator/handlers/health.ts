import { healthRoutes } from '#functions/shared/contracts/health.js';
import { httpApp } from '#functions/shared/http/app.js';
import { ok } from '#functions/shared/http/response.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { APP_VERSION } from '#functions/shared/version.js';

/**
 * GET /health: needs no token. On AWS the function answering is the readiness signal; it names the release of the code
 * that answers (package.json's version), so an operator sees which release took traffic after a deploy.
 */
const { env, verifier } = httpRuntime();

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  routes: [{ ...healthRoutes.getHealth, handle: async () => ok({ status: 'ok', version: APP_VERSION }) }],
});
