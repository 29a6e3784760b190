import { documentClient } from '../../adapters/aws.js';
import { tablesFromEnv } from '../../adapters/dynamodb/common.js';
import { DynamoReleaseRepository } from '../../adapters/dynamodb/releases.js';
import { DynamoTaskServiceRepository } from '../../adapters/dynamodb/task-services.js';
import { eventPublisher } from '../../adapters/event-publisher.js';
import { createReleaseOrchestrator } from '../../adapters/orchestrator.js';
import { actorOf, httpApp, ok, parse } from '../../shared/http.js';
import { envelope, pageQuery, ref } from '../../shared/list.js';
import { httpRuntime } from '../../shared/runtime.js';
import * as z from '../../shared/zod.js';
import { TASK_STATES } from '../model.js';
import { parseProgress, reportTask } from '../task-callback.js';
import { getTask, listTasks } from '../tasks.js';
import { taskJson } from '../views.js';

/** /tasks and /tasks/{id}. PATCH is the task services' callback: service or admin role. */
const { env, verifier } = httpRuntime();
const doc = documentClient();
const tables = tablesFromEnv();
const releases = new DynamoReleaseRepository(doc, tables);
const deps = {
  releases,
  taskServices: new DynamoTaskServiceRepository(doc, tables),
  publisher: eventPublisher(),
  orchestrator: createReleaseOrchestrator(releases),
};

const listQuery = z.object({
  ...pageQuery,
  release: z.optional(ref('RE', 'releases')),
  task_service: z.optional(ref('TS', 'task-services')),
  state: z.optional(z.enum(TASK_STATES)),
});
// Task services in the wild say "cancelled" for canceled and "initialized" for pending (issue 3, tolerance).
const ALIASES: Record<string, string> = { cancelled: 'canceled', initialized: 'pending' };
const reportedState = z.pipe(
  z.transform((v: unknown) => (typeof v === 'string' && v in ALIASES ? ALIASES[v] : v)),
  z.enum(TASK_STATES),
);
const patchBody = z.strictObject({
  state: z.optional(reportedState),
  progress: z.optional(
    z.union([z.number(), z.string().check(z.maxLength(20, 'must be at most 20 characters'))]),
  ),
});

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  routes: [
    {
      method: 'GET',
      path: '/tasks',
      access: 'read',
      handle: async (req) => {
        const q = parse(listQuery, req.query, 'query');
        const page = await listTasks(
          deps,
          { releaseId: q.release, taskServiceId: q.task_service, state: q.state },
          q,
        );
        const results = page.items.map((t) => taskJson(t, req.baseUrl));
        return ok(envelope(req.baseUrl, req.path, req.rawQuery, q, page.count, results));
      },
    },
    {
      method: 'GET',
      path: '/tasks/{id}',
      access: 'read',
      handle: async (req) => ok(taskJson(await getTask(deps, req.params.id), req.baseUrl)),
    },
    {
      method: 'PATCH',
      path: '/tasks/{id}',
      access: 'service',
      handle: async (req) => {
        const b = parse(patchBody, req.body);
        const progress = b.progress === undefined ? undefined : parseProgress(b.progress);
        const task = await reportTask(deps, req.params.id, { state: b.state, progress }, actorOf(req));
        return ok(taskJson(task, req.baseUrl));
      },
    },
  ],
});
