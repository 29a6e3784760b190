import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoIdempotencyStore } from '#functions/adapters/dynamodb/idempotency.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { DynamoTaskServiceRepository } from '#functions/adapters/dynamodb/task-services.js';
import { eventPublisher } from '#functions/adapters/event-publisher.js';
import { serviceClientsFromEnv } from '#functions/adapters/service-clients.js';
import { sfnMachineFromEnv } from '#functions/adapters/sfn-orchestrator.js';
import { createTaskServiceClient, urlPolicyFromEnv } from '#functions/adapters/task-service-client.js';
import { tokenClient } from '#functions/adapters/token-client.js';
import { releaseOrchestrator } from '#functions/orchestration/release-orchestrator.js';
import { boolEnv, parseEnv } from '#functions/shared/config.js';
import { httpApp } from '#functions/shared/http/app.js';
import { parse } from '#functions/shared/http/parse.js';
import { empty, ok } from '#functions/shared/http/response.js';
import { envelope } from '#functions/shared/list.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import * as z from '#functions/shared/zod.js';
import { taskServiceRoutes } from '../contracts/task-services.js';
import { quarantineTaskService, releaseTaskService } from '../quarantine.js';
import {
  deleteTaskService,
  getTaskService,
  listTaskServices,
  registerTaskService,
  rotateSigningSecret,
  updateTaskService,
} from '../task-services.js';
import { quarantinedJson, registrationJson, releasedJson, rotatedJson, taskServiceJson } from '../views.js';

/** /task-services and /task-services/{id}. Reads need any valid token; writes need admin. */
const { env, verifier } = httpRuntime();
const config = parseEnv(
  z.object({
    /** How long POST/PATCH /task-services waits for GET {url}/status. */
    TASK_SERVICE_PROBE_TIMEOUT_MS: z._default(z.coerce.number().check(z.int(), z.positive()), 5000),
    /** Every task service must name the OAuth client whose tokens act for it. */
    TASK_SERVICE_CLIENT_REQUIRED: boolEnv(false),
  }),
);
const urlPolicy = urlPolicyFromEnv();
const doc = documentClient();
const tables = tablesFromEnv();
const releases = new DynamoReleaseRepository(doc, tables);
const deps = {
  taskServices: new DynamoTaskServiceRepository(doc, tables),
  releases,
  publisher: eventPublisher(),
  // A quarantine cancels the releases it fails tasks of, and drives them to their end.
  orchestrator: releaseOrchestrator(releases, sfnMachineFromEnv()),
  taskServiceClient: createTaskServiceClient(tokenClient(), { policy: urlPolicy }),
  probeTimeoutMs: config.TASK_SERVICE_PROBE_TIMEOUT_MS,
  urlPolicy,
  clientRequired: config.TASK_SERVICE_CLIENT_REQUIRED,
  clients: serviceClientsFromEnv(),
};

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  idempotency: new DynamoIdempotencyStore(doc, tables.coordinator),
  routes: [
    {
      ...taskServiceRoutes.listTaskServices,
      handle: async (req) => {
        const q = parse(taskServiceRoutes.listTaskServices.query, req.query, 'query');
        const page = await listTaskServices(deps, { enabled: q.enabled }, q);
        return ok(
          envelope(req.baseUrl, req.path, req.rawQuery, q, page.count, page.items.map(taskServiceJson)),
        );
      },
    },
    {
      ...taskServiceRoutes.createTaskService,
      handle: async (req) => {
        const { client_id, create_client, author, ...b } = parse(
          taskServiceRoutes.createTaskService.body,
          req.body,
        );
        const registered = await registerTaskService(deps, {
          ...b,
          author: author ?? req.principal.sub ?? '',
          clientId: client_id ?? null,
          createClient: create_client,
        });
        // Secrets: never stored by a cache on the way back.
        return ok(registrationJson(registered), { 'Cache-Control': 'no-store' });
      },
    },
    {
      ...taskServiceRoutes.getTaskService,
      handle: async (req) => ok(taskServiceJson(await getTaskService(deps, req.params.id))),
    },
    {
      ...taskServiceRoutes.updateTaskService,
      handle: async (req) => {
        const { client_id, ...b } = parse(taskServiceRoutes.updateTaskService.body, req.body);
        return ok(
          taskServiceJson(await updateTaskService(deps, req.params.id, { ...b, clientId: client_id })),
        );
      },
    },
    {
      ...taskServiceRoutes.rotateTaskServiceSecret,
      handle: async (req) => {
        const b = parse(taskServiceRoutes.rotateTaskServiceSecret.body, req.body);
        const rotated = await rotateSigningSecret(deps, req.params.id, b.grace_seconds);
        return ok(rotatedJson(rotated), { 'Cache-Control': 'no-store' });
      },
    },
    {
      ...taskServiceRoutes.quarantineTaskService,
      handle: async (req) => {
        const b = parse(taskServiceRoutes.quarantineTaskService.body, req.body);
        const q = await quarantineTaskService(deps, req.params.id, {
          reason: b.reason,
          by: req.principal.sub ?? null,
        });
        return ok(quarantinedJson(q));
      },
    },
    {
      ...taskServiceRoutes.releaseTaskService,
      handle: async (req) =>
        ok(releasedJson(await releaseTaskService(deps, req.params.id)), { 'Cache-Control': 'no-store' }),
    },
    {
      ...taskServiceRoutes.deleteTaskService,
      handle: async (req) => {
        await deleteTaskService(deps, req.params.id);
        return empty();
      },
    },
  ],
});
