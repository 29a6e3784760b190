/**
 * The code of an answer other than 200, with the status the contract gives it: `invalid_input` 400, `unauthorized`
 * 401, `forbidden` 403, `not_found` 404, `method_not_allowed` 405, `rejected` and `not_ready` 503, `internal` 500.
 *
 * @example
 * ```ts
 * import type { ErrorCode } from '@release-coordinator/task-service';
 *
 * const code: ErrorCode = 'rejected';
 * ```
 */
export type ErrorCode =
  | 'invalid_input'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'rejected'
  | 'not_ready'
  | 'internal';

const STATUS: Record<ErrorCode, number> = {
  invalid_input: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  rejected: 503,
  not_ready: 503,
  internal: 500,
};

/**
 * An answer other than 200: thrown anywhere in the kit (or in a service's work, e.g. `beforeAction`), turned into
 * `{"message", "code"}` with the code's status by the service.
 *
 * @example
 * ```ts
 * import { KitError } from '@release-coordinator/task-service';
 *
 * throw new KitError('not_ready', 'the archive is being migrated');
 * ```
 */
export class KitError extends Error {
  override name = 'KitError';
  /** The HTTP status of `code`. */
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.status = STATUS[code];
  }
}

/**
 * Thrown by a task's `progress()` once the task or its release has ended: the work should stop.
 *
 * @example
 * ```ts
 * import { TaskEndedError } from '@release-coordinator/task-service';
 *
 * try {
 *   await task.progress(60);
 * } catch (err) {
 *   if (err instanceof TaskEndedError) return; // canceled meanwhile
 *   throw err;
 * }
 * ```
 */
export class TaskEndedError extends Error {
  override name = 'TaskEndedError';
}
