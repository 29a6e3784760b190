import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoMaintenanceSwitch } from '#functions/adapters/dynamodb/maintenance.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { httpApp } from '#functions/shared/http/app.js';
import { parse } from '#functions/shared/http/parse.js';
import { ok } from '#functions/shared/http/response.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { maintenanceRoutes } from '../contracts/maintenance.js';
import { getMaintenance, setMaintenance } from '../maintenance.js';
import { maintenanceJson } from '../views.js';

/** /maintenance: any valid token reads the switch; only an admin turns it on or off. */
const { env, verifier } = httpRuntime();
const doc = documentClient();
const tables = tablesFromEnv();
const deps = {
  maintenance: new DynamoMaintenanceSwitch(doc, tables.coordinator),
  releases: new DynamoReleaseRepository(doc, tables),
};

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  routes: [
    {
      ...maintenanceRoutes.getMaintenance,
      handle: async () => ok(maintenanceJson(await getMaintenance(deps))),
    },
    {
      ...maintenanceRoutes.setMaintenance,
      handle: async (req) => {
        const b = parse(maintenanceRoutes.setMaintenance.body, req.body);
        const m = await setMaintenance(deps, {
          on: b.on,
          by: req.principal.sub ?? null,
          reason: b.reason,
          retryAfterSeconds: b.retry_after_seconds,
        });
        return ok(maintenanceJson(m));
      },
    },
  ],
});
