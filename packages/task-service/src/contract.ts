import * as z from 'zod/mini';
import { TASK_STATES, type TaskAction } from './protocol.js';

/**
 * The task-service API as zod schemas: what the coordinator sends every task service (GET /status, POST /tasks with
 * one of five actions), what the service must answer, and the callback the service sends back
 * (PATCH {coordinator}/tasks/<task_id>). openapi/task-service.json is generated from these schemas
 * (`npm run openapi`, lib/openapi/task-service.ts); the kit serves them, and `drc task-service check` holds a
 * service to them. The answers are the canonical forms a conforming service gives; the coordinator itself tolerates
 * more (old spellings, percent strings, functions/orchestration/replies.ts), but a new service has no reason to.
 *
 * zod/mini, like the functions: the schemas end up in Lambda bundles (the kit behind a function URL).
 */

export * from './protocol.js';

/**
 * The Standard Webhooks headers that sign every POST /tasks (https://www.standardwebhooks.com): HMAC-SHA256 of
 * `<webhook-id>.<webhook-timestamp>.<raw body>` with the service's own secret (`whsec_…`), as `v1,<base64>`; during a
 * rotation's grace period two signatures separated by a space. GET /status is never signed.
 *
 * @example
 * ```ts
 * import { SIGNATURE_HEADERS } from '@release-coordinator/task-service';
 *
 * const signed = SIGNATURE_HEADERS.every((name) => request.headers[name] !== undefined);
 * ```
 */
export const SIGNATURE_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;
/**
 * A signature older (or further ahead) than this is refused; a webhook-id seen within twice this is a replay.
 *
 * @example
 * ```ts
 * import { SIGNATURE_TOLERANCE_SECONDS } from '@release-coordinator/task-service';
 *
 * const fresh = Math.abs(Date.now() / 1000 - Number(timestamp)) <= SIGNATURE_TOLERANCE_SECONDS;
 * ```
 */
export const SIGNATURE_TOLERANCE_SECONDS = 5 * 60;

/**
 * The audience of the coordinator's token locally (and at any issuer that puts it in `aud`).
 *
 * @example
 * ```ts
 * import { TASK_SERVICE_AUDIENCE, tokenChecker } from '@release-coordinator/task-service';
 *
 * tokenChecker({ mode: 'jwks', issuer: 'http://127.0.0.1:3002', audience: [TASK_SERVICE_AUDIENCE] });
 * ```
 */
export const TASK_SERVICE_AUDIENCE = 'task-services';
/**
 * On Cognito the coordinator's access token has no `aud`: it carries this scope and the coordinator's client_id.
 *
 * @example
 * ```ts
 * import { TASK_SERVICE_SCOPE } from '@release-coordinator/task-service';
 *
 * const rules = { scope: TASK_SERVICE_SCOPE, clientIds: ['4k1coordinatorclientid'] };
 * ```
 */
export const TASK_SERVICE_SCOPE = 'task-services/invoke';

/**
 * The coordinator's correlation id of the release's work, on every action; send it back on the callbacks.
 *
 * @example
 * ```ts
 * import { REQUEST_ID_HEADER } from '@release-coordinator/task-service';
 *
 * const requestId = request.headers[REQUEST_ID_HEADER.toLowerCase()];
 * ```
 */
export const REQUEST_ID_HEADER = 'X-Request-Id';

const taskId = z.string().check(z.minLength(1), z.maxLength(256));
const releaseId = z.string().check(z.minLength(1), z.maxLength(256));
const progress = z.int().check(z.minimum(0), z.maximum(100));

/**
 * The schema of the answer to GET /status, 200: ready for tasks.
 *
 * @example
 * ```ts
 * import { ServiceStatus } from '@release-coordinator/task-service';
 *
 * ServiceStatus.parse({ name: 'stager', message: 'ready', version: '1.2.0' });
 * ```
 */
export const ServiceStatus = z.looseObject({
  name: z.string().check(z.minLength(1)),
  message: z.string(),
  version: z.string(),
});
/**
 * An answer to GET /status.
 *
 * @example
 * ```ts
 * import { type ServiceStatus } from '@release-coordinator/task-service';
 *
 * const status: ServiceStatus = { name: 'stager', message: 'ready', version: '1.2.0' };
 * ```
 */
export type ServiceStatus = z.infer<typeof ServiceStatus>;

function actionRequest<A extends TaskAction>(action: A) {
  return z.looseObject({
    action: z.literal(action),
    task_id: taskId,
    release_id: releaseId,
    /** The release's study ids; the coordinator adds them to every action. */
    studies: z.optional(z.array(z.string())),
  });
}

/**
 * The body of POST /tasks for `initialize`: the task, its release and (from the coordinator) the release's studies.
 *
 * @example
 * ```ts
 * import { InitializeRequest } from '@release-coordinator/task-service';
 *
 * InitializeRequest.parse({ action: 'initialize', task_id: 'TA_4BTJ95CW', release_id: 'RE_QGAXVXK1' });
 * ```
 */
export const InitializeRequest = actionRequest('initialize');
/**
 * The body of POST /tasks for `start`: the task, its release and (from the coordinator) the release's studies.
 *
 * @example
 * ```ts
 * import { StartRequest } from '@release-coordinator/task-service';
 *
 * StartRequest.parse({ action: 'start', task_id: 'TA_4BTJ95CW', release_id: 'RE_QGAXVXK1' });
 * ```
 */
export const StartRequest = actionRequest('start');
/**
 * The body of POST /tasks for `get_status`: the task, its release and (from the coordinator) the release's studies.
 *
 * @example
 * ```ts
 * import { GetStatusRequest } from '@release-coordinator/task-service';
 *
 * GetStatusRequest.parse({ action: 'get_status', task_id: 'TA_4BTJ95CW', release_id: 'RE_QGAXVXK1' });
 * ```
 */
export const GetStatusRequest = actionRequest('get_status');
/**
 * The body of POST /tasks for `publish`: the task, its release and (from the coordinator) the release's studies.
 *
 * @example
 * ```ts
 * import { PublishRequest } from '@release-coordinator/task-service';
 *
 * PublishRequest.parse({ action: 'publish', task_id: 'TA_4BTJ95CW', release_id: 'RE_QGAXVXK1' });
 * ```
 */
export const PublishRequest = actionRequest('publish');
/**
 * The body of POST /tasks for `cancel`: the task, its release and (from the coordinator) the release's studies.
 *
 * @example
 * ```ts
 * import { CancelRequest } from '@release-coordinator/task-service';
 *
 * CancelRequest.parse({ action: 'cancel', task_id: 'TA_4BTJ95CW', release_id: 'RE_QGAXVXK1' });
 * ```
 */
export const CancelRequest = actionRequest('cancel');

/**
 * The schema of a POST /tasks body: one per action, told apart by `action`. Any other action is a 400.
 *
 * @example
 * ```ts
 * import { ActionRequest } from '@release-coordinator/task-service';
 *
 * const request = ActionRequest.parse(JSON.parse(body));
 * if (request.action === 'start') {
 *   // stage request.studies for request.release_id
 * }
 * ```
 */
export const ActionRequest = z.discriminatedUnion('action', [
  InitializeRequest,
  StartRequest,
  GetStatusRequest,
  PublishRequest,
  CancelRequest,
]);
/**
 * A POST /tasks body.
 *
 * @example
 * ```ts
 * import { type ActionRequest } from '@release-coordinator/task-service';
 *
 * const request: ActionRequest = { action: 'get_status', task_id: 'TA_4BTJ95CW', release_id: 'RE_QGAXVXK1' };
 * ```
 */
export type ActionRequest = z.infer<typeof ActionRequest>;

/**
 * The schema of the answer to POST /tasks, 200: the task as the service sees it, for every action.
 *
 * @example
 * ```ts
 * import { TaskReply } from '@release-coordinator/task-service';
 *
 * TaskReply.safeParse(await response.json()).success; // a conforming answer
 * ```
 */
export const TaskReply = z.looseObject({
  name: z.string().check(z.minLength(1)),
  /** The task id: the spec's name for it. */
  kf_id: taskId,
  /** The same id again, for clients that read task_id. */
  task_id: z.optional(taskId),
  release_id: releaseId,
  state: z.enum(TASK_STATES),
  progress,
  /** When the service received the task (its initialize): ISO 8601 with a UTC offset. */
  date_submitted: z.iso.datetime({ offset: true }),
});
/**
 * An answer to POST /tasks.
 *
 * @example
 * ```ts
 * import { type TaskReply } from '@release-coordinator/task-service';
 *
 * const reply: TaskReply = {
 *   name: 'stager',
 *   kf_id: 'TA_4BTJ95CW',
 *   release_id: 'RE_QGAXVXK1',
 *   state: 'running',
 *   progress: 0,
 *   date_submitted: '2026-11-26T03:44:38.512Z',
 * };
 * ```
 */
export type TaskReply = z.infer<typeof TaskReply>;

/**
 * The schema of every non-200 answer of a task service: a JSON object with a message for people.
 *
 * @example
 * ```ts
 * import { ErrorReply } from '@release-coordinator/task-service';
 *
 * ErrorReply.parse({ message: 'start of a published task', code: 'rejected' });
 * ```
 */
export const ErrorReply = z.looseObject({
  message: z.string(),
  code: z.optional(z.string()),
});
/**
 * A non-200 answer of a task service.
 *
 * @example
 * ```ts
 * import { type ErrorReply } from '@release-coordinator/task-service';
 *
 * const refused: ErrorReply = { message: 'no such task', code: 'not_found' };
 * ```
 */
export type ErrorReply = z.infer<typeof ErrorReply>;

/**
 * The schema of PATCH {coordinator}/tasks/<task_id>, sent by the service with a token of its own: a new state,
 * progress, or both. No other field is accepted (the coordinator answers 400).
 *
 * @example
 * ```ts
 * import { TaskCallback } from '@release-coordinator/task-service';
 *
 * TaskCallback.parse({ state: 'staged', progress: 100 });
 * TaskCallback.safeParse({}).success; // false: state or progress is required
 * ```
 */
export const TaskCallback = z
  .strictObject({
    state: z.optional(z.enum(TASK_STATES)),
    progress: z.optional(progress),
  })
  .check(
    z.refine((v) => v.state !== undefined || v.progress !== undefined, {
      message: 'state or progress is required',
    }),
  );
/**
 * A callback's body.
 *
 * @example
 * ```ts
 * import { type TaskCallback } from '@release-coordinator/task-service';
 *
 * const body: TaskCallback = { progress: 40 };
 * ```
 */
export type TaskCallback = z.infer<typeof TaskCallback>;

/**
 * The schema of the coordinator's 200 answer to a callback: the task as it has it recorded (only what a service
 * reads).
 *
 * @example
 * ```ts
 * import { CallbackAnswer } from '@release-coordinator/task-service';
 *
 * const { state } = CallbackAnswer.parse(await response.json());
 * ```
 */
export const CallbackAnswer = z.looseObject({
  kf_id: z.optional(z.string()),
  state: z.enum(TASK_STATES),
  progress: z.optional(z.number()),
});
/**
 * The coordinator's 200 answer to a callback.
 *
 * @example
 * ```ts
 * import { type CallbackAnswer } from '@release-coordinator/task-service';
 *
 * const answer: CallbackAnswer = { kf_id: 'TA_4BTJ95CW', state: 'canceled', progress: 40 };
 * ```
 */
export type CallbackAnswer = z.infer<typeof CallbackAnswer>;

/**
 * The schema of the coordinator's error answers.
 *
 * @example
 * ```ts
 * import { CoordinatorError } from '@release-coordinator/task-service';
 *
 * const { error } = CoordinatorError.parse(await response.json());
 * console.log(error.code, error.message);
 * ```
 */
export const CoordinatorError = z.looseObject({
  error: z.looseObject({ code: z.string(), message: z.string() }),
});
/**
 * An error answer of the coordinator.
 *
 * @example
 * ```ts
 * import { type CoordinatorError } from '@release-coordinator/task-service';
 *
 * const conflict: CoordinatorError = {
 *   error: { code: 'conflict', message: 'Task TA_1 may not change from published to running' },
 * };
 * ```
 */
export type CoordinatorError = z.infer<typeof CoordinatorError>;

/**
 * The statuses of a callback's answer that are retried, after Retry-After (bounded): 409, 429 and 503. A service
 * stops its work when the task or its release has ended (a 409 that is not a race, or a 200 naming canceled or
 * failed).
 *
 * @example
 * ```ts
 * import { CALLBACK_RETRY_STATUSES } from '@release-coordinator/task-service';
 *
 * const retry = (CALLBACK_RETRY_STATUSES as readonly number[]).includes(response.status);
 * ```
 */
export const CALLBACK_RETRY_STATUSES = [409, 429, 503] as const;
