import { healthRoutes } from '../../shared/contracts/health.js';
import { httpApp, ok } from '../../shared/http.js';
import { httpRuntime } from '../../shared/runtime.js';

/** GET /health: needs no token. On AWS the function answering is the readiness signal. */
const { env, verifier } = httpRuntime();

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  routes: [{ ...healthRoutes.getHealth, handle: async () => ok({ status: 'ok' }) }],
});
