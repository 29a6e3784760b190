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
 */
export const SIGNATURE_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;
/** A signature older (or further ahead) than this is refused; a webhook-id seen within twice this is a replay. */
export const SIGNATURE_TOLERANCE_SECONDS = 5 * 60;

/** The audience of the coordinator's token locally (and at any issuer that puts it in `aud`). */
export const TASK_SERVICE_AUDIENCE = 'task-services';
/** On Cognito the coordinator's access token has no `aud`: it carries this scope and the coordinator's client_id. */
export const TASK_SERVICE_SCOPE = 'task-services/invoke';

/** The coordinator's correlation id of the release's work, on every action; send it back on the callbacks. */
export const REQUEST_ID_HEADER = 'X-Request-Id';

const taskId = z.string().check(z.minLength(1), z.maxLength(256));
const releaseId = z.string().check(z.minLength(1), z.maxLength(256));
const progress = z.int().check(z.minimum(0), z.maximum(100));

/** GET /status, 200: ready for tasks. */
export const ServiceStatus = z.looseObject({
  name: z.string().check(z.minLength(1)),
  message: z.string(),
  version: z.string(),
});
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

export const InitializeRequest = actionRequest('initialize');
export const StartRequest = actionRequest('start');
export const GetStatusRequest = actionRequest('get_status');
export const PublishRequest = actionRequest('publish');
export const CancelRequest = actionRequest('cancel');

/** POST /tasks: one body per action, told apart by `action`. Any other action is a 400. */
export const ActionRequest = z.discriminatedUnion('action', [
  InitializeRequest,
  StartRequest,
  GetStatusRequest,
  PublishRequest,
  CancelRequest,
]);
export type ActionRequest = z.infer<typeof ActionRequest>;

/** POST /tasks, 200: the task as the service sees it, for every action. */
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
export type TaskReply = z.infer<typeof TaskReply>;

/** Every non-200 answer of a task service: a JSON object with a message for people. */
export const ErrorReply = z.looseObject({
  message: z.string(),
  code: z.optional(z.string()),
});
export type ErrorReply = z.infer<typeof ErrorReply>;

/**
 * PATCH {coordinator}/tasks/<task_id>, sent by the service with a token of its own: a new state, progress, or both.
 * No other field is accepted (the coordinator answers 400).
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
export type TaskCallback = z.infer<typeof TaskCallback>;

/** The coordinator's 200 answer to a callback: the task as it has it recorded (only what a service reads). */
export const CallbackAnswer = z.looseObject({
  kf_id: z.optional(z.string()),
  state: z.enum(TASK_STATES),
  progress: z.optional(z.number()),
});
export type CallbackAnswer = z.infer<typeof CallbackAnswer>;

/** The coordinator's error answers (docs/api.md, Errors). */
export const CoordinatorError = z.looseObject({
  error: z.looseObject({ code: z.string(), message: z.string() }),
});
export type CoordinatorError = z.infer<typeof CoordinatorError>;

/**
 * How the service treats the callback's answer: `retry` after Retry-After (bounded) for 409, 429 and 503, `stop`
 * its work when the task or its release has ended (a 409 that is not a race, or a 200 naming canceled or failed).
 */
export const CALLBACK_RETRY_STATUSES = [409, 429, 503] as const;
