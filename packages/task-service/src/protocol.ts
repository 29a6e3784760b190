/**
 * The task-service protocol's vocabulary: the actions the coordinator sends, the states a task goes through, and the
 * rules that move a task between them. Plain data with no schema library, so the coordinator's Lambda bundles take
 * these from here without the zod schemas of the wire format (contract.ts, which re-exports everything here).
 */

/**
 * The five actions of `POST /tasks`, in the order a release sends them (`get_status` while it waits).
 *
 * @example
 * ```ts
 * import { TASK_ACTIONS } from '@release-coordinator/task-service';
 *
 * TASK_ACTIONS.includes('publish'); // true
 * ```
 */
export const TASK_ACTIONS = ['initialize', 'start', 'get_status', 'publish', 'cancel'] as const;

/**
 * One of TASK_ACTIONS.
 *
 * @example
 * ```ts
 * import type { TaskAction } from '@release-coordinator/task-service';
 *
 * const action: TaskAction = 'start';
 * ```
 */
export type TaskAction = (typeof TASK_ACTIONS)[number];

/**
 * The states of a task, from `pending` (initialized) through `staged` (its work done) to `published`, or ended early
 * as `canceled` or `failed`.
 *
 * @example
 * ```ts
 * import { TASK_STATES } from '@release-coordinator/task-service';
 *
 * TASK_STATES.indexOf('staged') < TASK_STATES.indexOf('published'); // true
 * ```
 */
export const TASK_STATES = [
  'pending',
  'running',
  'staged',
  'publishing',
  'published',
  'canceled',
  'failed',
] as const;

/**
 * One of TASK_STATES.
 *
 * @example
 * ```ts
 * import type { TaskState } from '@release-coordinator/task-service';
 *
 * const state: TaskState = 'running';
 * ```
 */
export type TaskState = (typeof TASK_STATES)[number];

/**
 * States after which nothing more happens to a task.
 *
 * @example
 * ```ts
 * import { END_STATES } from '@release-coordinator/task-service';
 *
 * END_STATES.includes('failed'); // true: no action or callback changes the task any more
 * ```
 */
export const END_STATES: readonly TaskState[] = ['published', 'canceled', 'failed'];

/**
 * The states a 200 reply to each action may carry. A repeated action answers the task as it is, so the states a
 * repeat can reach are here too: `start` of a task already staged answers staged, `publish` of a task already
 * published answers published, `cancel` of a task that has already ended (published, failed) answers that end.
 *
 * @example
 * ```ts
 * import { REPLY_STATES } from '@release-coordinator/task-service';
 *
 * REPLY_STATES.publish; // ['publishing', 'published', 'failed']
 * ```
 */
export const REPLY_STATES: Record<TaskAction, readonly TaskState[]> = {
  initialize: ['pending', 'running', 'staged', 'publishing', 'published', 'canceled', 'failed'],
  start: ['running', 'staged', 'failed'],
  get_status: ['pending', 'running', 'staged', 'publishing', 'published', 'canceled', 'failed'],
  publish: ['publishing', 'published', 'failed'],
  cancel: ['canceled', 'published', 'failed'],
};

/**
 * What each action does to a task in each state; `same` answers the task as it is (200), `reject` is a 503, and an
 * action for a task the service does not know (other than initialize) is a 404. Every action is idempotent: the
 * coordinator may send any of them again (a retry after a lost answer, a restart of its own), and the second one
 * answers the same as the first without starting the work twice. Tasks survive a restart of the service.
 *
 * @example
 * ```ts
 * import { ACTION_RULES } from '@release-coordinator/task-service';
 *
 * ACTION_RULES.publish.staged; // 'publishing'
 * ACTION_RULES.publish.running; // 'reject': the work is not staged yet
 * ```
 */
export const ACTION_RULES: Record<TaskAction, Partial<Record<TaskState, TaskState | 'same' | 'reject'>>> = {
  initialize: {
    pending: 'same',
    running: 'same',
    staged: 'same',
    publishing: 'same',
    published: 'same',
    canceled: 'same',
    failed: 'same',
  },
  start: {
    pending: 'running',
    running: 'same',
    staged: 'same',
    publishing: 'reject',
    published: 'reject',
    canceled: 'reject',
    failed: 'same',
  },
  get_status: {
    pending: 'same',
    running: 'same',
    staged: 'same',
    publishing: 'same',
    published: 'same',
    canceled: 'same',
    failed: 'same',
  },
  publish: {
    pending: 'reject',
    running: 'reject',
    staged: 'publishing',
    publishing: 'same',
    published: 'same',
    canceled: 'reject',
    failed: 'same',
  },
  cancel: {
    pending: 'canceled',
    running: 'canceled',
    staged: 'canceled',
    publishing: 'canceled',
    published: 'same',
    canceled: 'same',
    failed: 'same',
  },
};

/**
 * The changes of state a callback (`PATCH {coordinator}/tasks/<task_id>`) may make; the coordinator answers 409 to
 * any other, and to a state its release's phase does not allow. Repeating the current state only updates the
 * progress. `pending -> staged` and `staged -> published` are here because a fast service reports the end of its
 * work before the coordinator has recorded the reply to `start` (running) or `publish` (publishing).
 *
 * @example
 * ```ts
 * import { CALLBACK_TRANSITIONS } from '@release-coordinator/task-service';
 *
 * CALLBACK_TRANSITIONS.running.includes('staged'); // true
 * CALLBACK_TRANSITIONS.published; // []: an end state
 * ```
 */
export const CALLBACK_TRANSITIONS: Record<TaskState, readonly TaskState[]> = {
  pending: ['running', 'staged', 'failed', 'canceled'],
  running: ['staged', 'failed', 'canceled'],
  staged: ['publishing', 'published', 'failed', 'canceled'],
  publishing: ['published', 'failed', 'canceled'],
  published: [],
  canceled: [],
  failed: [],
};
