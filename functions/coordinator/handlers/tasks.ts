import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { DynamoTaskServiceRepository } from '#functions/adapters/dynamodb/task-services.js';
import { eventPublisher } from '#functions/adapters/event-publisher.js';
import { sfnMachineFromEnv } from '#functions/adapters/sfn-orchestrator.js';
import { releaseOrchestrator } from '#functions/orchestration/release-orchestrator.js';
import { httpApp } from '#functions/shared/http/app.js';
import { actorOf } from '#functions/shared/http/authentication.js';
import { parse } from '#functions/shared/http/parse.js';
import { ok } from '#functions/shared/http/response.js';
import type { Request } from '#functions/shared/http/router.js';
import { envelope } from '#functions/shared/list.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { taskRoutes } from '../contracts/tasks.js';
import { parseProgress, reportTask } from '../task-callback.js';
import { getTask, listTasks, type TaskReader } from '../tasks.js';
import { taskJson } from '../views.js';

/**
 * /tasks and /tasks/{id}. PATCH is the task services' callback: service or admin role. A task service reads its own
 * tasks with its own client's token too, and a token that speaks for one service reads no other's (tasks.ts).
 */
const { env, verifier } = httpRuntime();
const doc = documentClient();
const tables = tablesFromEnv();
const releases = new DynamoReleaseRepository(doc, tables);
const deps = {
  releases,
  taskServices: new DynamoTaskServiceRepository(doc, tables),
  publisher: eventPublisher(),
  orchestrator: releaseOrchestrator(releases, sfnMachineFromEnv()),
};

const readerOf = (req: { principal: Request['principal'] }): TaskReader => ({
  ...actorOf(req),
  isService: req.principal.isService,
});

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  routes: [
    {
      ...taskRoutes.listTasks,
      handle: async (req) => {
        const q = parse(taskRoutes.listTasks.query, req.query, 'query');
        const page = await listTasks(
          deps,
          { releaseId: q.release, taskServiceId: q.task_service, state: q.state },
          q,
          readerOf(req),
        );
        const results = page.items.map((t) => taskJson(t, req.baseUrl));
        return ok(envelope(req.baseUrl, req.path, req.rawQuery, q, page.count, results));
      },
    },
    {
      ...taskRoutes.getTask,
      handle: async (req) => ok(taskJson(await getTask(deps, req.params.id, readerOf(req)), req.baseUrl)),
    },
    {
      ...taskRoutes.reportTask,
      handle: async (req) => {
        const b = parse(taskRoutes.reportTask.body, req.body);
        const progress = b.progress === undefined ? undefined : parseProgress(b.progress);
        const task = await reportTask(deps, req.params.id, { state: b.state, progress }, actorOf(req));
        return ok(taskJson(task, req.baseUrl));
      },
    },
  ],
});
