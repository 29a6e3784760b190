import type { Contracts, GroupDoc } from '#functions/shared/contract.js';
import { LIMITS, text } from '#functions/shared/limits.js';
import * as z from '#functions/shared/zod.js';
import {
  DEFAULT_MAINTENANCE_RETRY_AFTER_SECONDS,
  MAX_MAINTENANCE_RETRY_AFTER_SECONDS,
} from '../maintenance.js';
import type { CoordinatorSchemas } from './schemas.js';

/** /maintenance: the switch that refuses new releases while the running ones finish (docs/operations.md). */
export const maintenanceRoutes = {
  getMaintenance: { method: 'GET', path: '/maintenance', access: 'read' },
  setMaintenance: {
    method: 'PUT',
    path: '/maintenance',
    access: 'admin',
    body: z.strictObject({
      on: z.boolean(),
      /** Why: shown by GET /maintenance and in the 503 of POST /releases. */
      reason: z.optional(text(LIMITS.description)),
      /** The `Retry-After` of a refused POST /releases. */
      retry_after_seconds: z.optional(
        z.number().check(z.int(), z.minimum(1), z.maximum(MAX_MAINTENANCE_RETRY_AFTER_SECONDS)),
      ),
    }),
  },
} as const satisfies Contracts;

export function maintenanceDocs(s: CoordinatorSchemas): GroupDoc<typeof maintenanceRoutes> {
  return {
    tag: {
      name: 'Maintenance',
      description:
        'Maintenance mode: while it is on, POST /releases answers 503 with `Retry-After`; releases already ' +
        'running go on to their end (publish, cancel and callbacks included). docs/operations.md, Upgrades.',
    },
    operations: {
      getMaintenance: {
        summary: 'Read the maintenance switch',
        description:
          'Off unless an admin turned it on. `running_releases` counts the releases that are not terminal: a deploy ' +
          'that waits for the running releases to finish waits for 0.',
        answers: { 200: s.Maintenance },
      },
      setMaintenance: {
        summary: 'Turn maintenance mode on or off',
        description:
          `\`{"on": true}\` refuses new releases from the next request on, with \`Retry-After\` ` +
          `\`retry_after_seconds\` (default ${DEFAULT_MAINTENANCE_RETRY_AFTER_SECONDS}); \`{"on": false}\` takes them again.`,
        answers: { 200: s.Maintenance },
      },
    },
  };
}
