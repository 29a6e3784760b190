import type { Contracts, GroupDoc } from '#functions/shared/contract.js';
import { type Describe, pageOf } from '#functions/shared/contracts/schemas.js';
import { pageQuery, ref } from '#functions/shared/list.js';
import * as z from '#functions/shared/zod.js';
import { TASK_STATES } from '#packages/task-service/src/protocol.js';
import type { CoordinatorSchemas } from './schemas.js';

/** /tasks and /tasks/{id}. PATCH is the task services' callback: service or admin role. */

// Task services in the wild say "cancelled" for canceled and "initialized" for pending (docs/task-service-api.md, POST /tasks).
const ALIASES: Record<string, string> = { cancelled: 'canceled', initialized: 'pending' };
const reportedState = z.pipe(
  z.transform((v: unknown) => (typeof v === 'string' && v in ALIASES ? ALIASES[v] : v)),
  z.enum(TASK_STATES),
);

export const taskRoutes = {
  listTasks: {
    method: 'GET',
    path: '/tasks',
    access: 'read',
    // A task service lists its own tasks with its own client's token (task_service=<its id>: tasks.ts).
    serviceClients: true,
    query: z.object({
      ...pageQuery,
      release: z.optional(ref('RE', 'releases')),
      task_service: z.optional(ref('TS', 'task-services')),
      state: z.optional(z.enum(TASK_STATES)),
    }),
  },
  // A task service reads its own tasks with its own client's token (tasks.ts).
  getTask: { method: 'GET', path: '/tasks/{id}', access: 'read', serviceClients: true },
  reportTask: {
    method: 'PATCH',
    path: '/tasks/{id}',
    access: 'service',
    // A task service's own app client reports on its tasks (docs/security.md).
    serviceClients: true,
    body: z.strictObject({
      state: z.optional(reportedState),
      progress: z.optional(
        z.union([z.number(), z.string().check(z.maxLength(20, 'must be at most 20 characters'))]),
      ),
    }),
  },
} as const satisfies Contracts;

export function taskDocs(s: CoordinatorSchemas, describe: Describe): GroupDoc<typeof taskRoutes> {
  const id = { id: 'The task id (TA_…)' };
  return {
    tag: { name: 'Tasks', description: 'One per task service and release; task services report on them.' },
    operations: {
      listTasks: {
        summary: 'List tasks, newest first',
        description:
          "A task service's own client, and a `service` token bound to a task service, list that service's " +
          'tasks only (`task_service=<its id>`, else 403).',
        queryDocs: {
          state: 'Only tasks in this state',
          task_service: "A task service's tasks (TS_ id or URL)",
        },
        answers: { 200: pageOf(describe, s.Task) },
        errors: { 403: "A task service's token lists the tasks of another service, or names none" },
      },
      getTask: {
        summary: 'Read a task',
        description:
          "A task service's own client, and a `service` token bound to a task service, read that service's tasks " +
          'only (403 for another service’s task).',
        params: id,
        answers: { 200: s.Task },
        errors: { 403: "A task service's token reads another service's task" },
      },
      reportTask: {
        summary: 'Report a task’s state or progress (task services)',
        description:
          '`progress` is an integer or a percent string ("50%"), 0 to 100; `cancelled` reads as `canceled` and ' +
          '`initialized` as `pending`. A task service bound to a client may report only its own tasks (403). ' +
          'A `failed` or `canceled` task takes its release with it.',
        params: id,
        answers: { 200: s.Task },
        errors: {
          409:
            'The change of state is not allowed (or the release is over: published, canceled, failed), or it met ' +
            'concurrent changes on every retry: then `Retry-After` is set, and the same request should be sent ' +
            'again after that many seconds',
          503: 'DynamoDB kept throttling the write: send the same request again after `Retry-After` seconds',
        },
      },
    },
  };
}
