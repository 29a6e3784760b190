import { documentClient } from '../../adapters/aws.js';
import { tablesFromEnv } from '../../adapters/dynamodb/common.js';
import { DynamoIdempotencyStore } from '../../adapters/dynamodb/idempotency.js';
import { DynamoReleaseRepository } from '../../adapters/dynamodb/releases.js';
import { DynamoTaskServiceRepository } from '../../adapters/dynamodb/task-services.js';
import { createTaskServiceClient, urlPolicyFromEnv } from '../../adapters/task-service-client.js';
import { tokenClient } from '../../adapters/token-client.js';
import { boolEnv, parseEnv } from '../../shared/config.js';
import { empty, httpApp, ok, parse } from '../../shared/http.js';
import { LIMITS, text } from '../../shared/limits.js';
import { boolQuery, envelope, pageQuery } from '../../shared/list.js';
import { httpRuntime } from '../../shared/runtime.js';
import * as z from '../../shared/zod.js';
import {
  deleteTaskService,
  getTaskService,
  listTaskServices,
  registerTaskService,
  updateTaskService,
} from '../task-services.js';
import { taskServiceJson } from '../views.js';

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
const deps = {
  taskServices: new DynamoTaskServiceRepository(doc, tables),
  releases: new DynamoReleaseRepository(doc, tables),
  taskServiceClient: createTaskServiceClient(tokenClient(), { policy: urlPolicy }),
  probeTimeoutMs: config.TASK_SERVICE_PROBE_TIMEOUT_MS,
  urlPolicy,
  clientRequired: config.TASK_SERVICE_CLIENT_REQUIRED,
};

const listQuery = z.object({ ...pageQuery, enabled: z.optional(boolQuery) });
const clientId = text(LIMITS.clientId).check(z.minLength(1, 'must not be empty'));
const createBody = z.strictObject({
  name: text(LIMITS.name).check(z.minLength(1)),
  description: z._default(text(LIMITS.description), ''),
  author: z._default(text(LIMITS.author), ''),
  url: text(LIMITS.url).check(z.minLength(1)),
  enabled: z._default(z.boolean(), true),
  /** The OAuth client (or subject) whose tokens act for this service. */
  client_id: z.nullish(clientId),
});
const patchBody = z.strictObject({
  name: z.optional(text(LIMITS.name).check(z.minLength(1))),
  description: z.optional(text(LIMITS.description)),
  author: z.optional(text(LIMITS.author)),
  url: z.optional(text(LIMITS.url).check(z.minLength(1))),
  enabled: z.optional(z.boolean()),
  /** null unbinds the service. */
  client_id: z.nullish(clientId),
});

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  idempotency: new DynamoIdempotencyStore(doc, tables.coordinator),
  routes: [
    {
      method: 'GET',
      path: '/task-services',
      access: 'read',
      handle: async (req) => {
        const q = parse(listQuery, req.query, 'query');
        const page = await listTaskServices(deps, { enabled: q.enabled }, q);
        return ok(
          envelope(req.baseUrl, req.path, req.rawQuery, q, page.count, page.items.map(taskServiceJson)),
        );
      },
    },
    {
      method: 'POST',
      path: '/task-services',
      access: 'admin',
      idempotent: true,
      handle: async (req) => {
        const { client_id, ...b } = parse(createBody, req.body);
        return ok(taskServiceJson(await registerTaskService(deps, { ...b, clientId: client_id ?? null })));
      },
    },
    {
      method: 'GET',
      path: '/task-services/{id}',
      access: 'read',
      handle: async (req) => ok(taskServiceJson(await getTaskService(deps, req.params.id))),
    },
    {
      method: 'PATCH',
      path: '/task-services/{id}',
      access: 'admin',
      handle: async (req) => {
        const { client_id, ...b } = parse(patchBody, req.body);
        return ok(
          taskServiceJson(await updateTaskService(deps, req.params.id, { ...b, clientId: client_id })),
        );
      },
    },
    {
      method: 'DELETE',
      path: '/task-services/{id}',
      access: 'admin',
      handle: async (req) => {
        await deleteTaskService(deps, req.params.id);
        return empty();
      },
    },
  ],
});
