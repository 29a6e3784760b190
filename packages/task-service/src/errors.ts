/**
 * An answer other than 200, with the status the contract gives it (openapi/task-service.json): thrown anywhere in
 * the kit, turned into `{"message", "code"}` by the service.
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

export class KitError extends Error {
  override name = 'KitError';
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.status = STATUS[code];
  }
}

/** Thrown by a task's `progress()` once the task or its release has ended: the work should stop. */
export class TaskEndedError extends Error {
  override name = 'TaskEndedError';
}
