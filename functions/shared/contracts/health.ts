import type { Contracts, GroupDoc } from '../contract.js';
import { healthSchema } from './schemas.js';

/** GET /health, on both APIs. */
export const healthRoutes = {
  getHealth: { method: 'GET', path: '/health', access: 'public' },
} as const satisfies Contracts;

export function healthDocs(): GroupDoc<typeof healthRoutes> {
  return {
    tag: { name: 'Health', description: 'Readiness of the API; needs no token.' },
    operations: {
      getHealth: {
        summary: 'Report readiness',
        description:
          'Answers `{"status": "ok", "version": "<release>"}`, the release of the code that answers (semver, as in ' +
          'CHANGELOG.md). On AWS the function answering is the signal; the local stack answers 503 ' +
          '(`not_ready`) until its first study sync is done.',
        answers: { 200: healthSchema() },
        errors: { 503: 'The local stack is still starting (`not_ready`)' },
      },
    },
  };
}
