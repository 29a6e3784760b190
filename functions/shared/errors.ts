/**
 * The one error model. Use cases throw these; `toErrorResponse` (http/error-response.ts) maps them to a status and
 * the single JSON error body `{ error: { code, message, fields? } }`. Only 4xx messages reach callers; anything else
 * becomes a generic 500 whose detail stays in the log. An error raised because another failed carries that one as
 * `cause` (as Powertools' errors do), so the log shows the whole chain.
 *
 * The deployed bundles are minified, so a class's own name is not stable (`NotFoundError` may become `sf`), and a
 * bundle holds its own copy of every class. Errors are therefore recognised by their `code` (`hasCode`,
 * `isAppError`), never by a class name or by `instanceof` across module boundaries, and every `name` is a string
 * literal (Step Functions matches Lambda errors by name: ORCHESTRATION_ERRORS).
 */
export type FieldErrors = Record<string, string[]>;

/**
 * Every error code, in one list (as dynamodb-toolbox's allErrors.ts): what each means and, for the codes the APIs
 * answer with, the usual status. `ErrorCode` is their union, so a mistyped code fails the compiler wherever an
 * error is made (`new AppError`) or recognised (`hasCode`). A new code is a line here.
 */
export const ERROR_CODES = {
  // The APIs' error bodies (docs/api.md).
  validation_error: '400: a field, parameter or reference is invalid; `fields` names each',
  bad_request: '400: the body is unreadable (not JSON, wrong content type)',
  unauthorized: '401: no valid bearer token',
  forbidden: '403: the token does not allow this',
  not_found: '404: nothing by that id or path',
  method_not_allowed: '405: the path exists, the method does not (`Allow` lists those that do)',
  conflict: '409: the record is not in a state that allows this, or changed concurrently',
  idempotency_in_progress: '409: a request with this Idempotency-Key is still running',
  confirmation_required:
    '409: the change would undo work that is already public (canceling a publishing release); the message says how to confirm',
  request_too_large: '413: a DRS bulk request names more items than accepted',
  payload_too_large: '413: the body is over the limit (local servers)',
  unsupported_media_type: '415: the body is not in a media type the endpoint reads (local identity provider)',
  idempotency_key_reused: '422: this Idempotency-Key came with another body',
  upload_mismatch: '422: an uploaded part or file does not match what was declared',
  internal_error: '500: anything unexpected; the detail stays in the log',
  token_unavailable:
    '503: the coordinator could not get its own access token (transient for the orchestration)',
  not_ready: '503: the local stack is still starting',
  busy: '503: the data store is throttling requests; retry after the `Retry-After` seconds',
  maintenance:
    '503: the coordinator is in maintenance mode and takes no new releases; retry after the `Retry-After` seconds',
  identity_provider_unavailable:
    "503: the identity provider could not make or delete a task service's client; nothing was registered",
  // The local identity provider's OAuth 2.0 token errors (RFC 6749, section 5.2).
  invalid_request: '400: a required parameter is missing or repeated (OAuth)',
  invalid_client: '401: unknown client or wrong secret (OAuth)',
  invalid_grant: '400: the code, verifier or redirect does not match (OAuth)',
  unsupported_grant_type: '400: a grant type this client may not use (OAuth)',
  // Codes that classify errors inside the system and never reach a caller as such.
  transient: 'a condition that passes with time; the state machine retries the step (TransientError)',
  deadline: 'work that ran past its deadline (the upload verification hashes in slices)',
  ESSRF_REFUSED:
    'the URL policy refused to connect to a task service (Node-style, as the HTTP stack may wrap it)',
} as const;
export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * The error names statemachines/release.asl.json matches (Retry) or raises (Fail states). They are string literals
 * on purpose: minification renames classes, and Step Functions sees only `error.name`.
 */
export const ORCHESTRATION_ERRORS = {
  /** Thrown by the state machine's functions for infrastructure trouble; every task state retries it. */
  transient: 'Orchestration.Transient',
  /** The Fail state for a step the dispatcher does not know. */
  unknownStep: 'Orchestration.UnknownStep',
  /** The Fail state of an execution that could not bring its release to a terminal state. */
  failed: 'Orchestration.Failed',
} as const;
export type OrchestrationErrorName = (typeof ORCHESTRATION_ERRORS)[keyof typeof ORCHESTRATION_ERRORS];

/** What a wrapping error keeps of the error it wraps (the standard `ErrorOptions`). */
export interface ErrorCause {
  cause?: unknown;
}

export class AppError extends Error {
  /**
   * Structured facts beside the message, rendered as fields of the error body (e.g. the tasks that already published,
   * for `confirmation_required`). Never `code`, `message` or `fields`.
   */
  details?: Record<string, unknown>;
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly fields?: FieldErrors,
    readonly headers?: Record<string, string>,
    options?: ErrorCause,
  ) {
    super(message, options);
  }
  override name = 'AppError';
}

/** True for an AppError from any bundle or module copy: recognised by its shape and code, not by class identity. */
export function isAppError(err: unknown): err is AppError {
  if (!(err instanceof Error)) return false;
  const e = err as Partial<AppError>;
  return typeof e.status === 'number' && typeof e.code === 'string' && Object.hasOwn(ERROR_CODES, e.code);
}

/** True when `err` carries the stable error code `code` (AppError codes, TransientError's, `deadline`, ...). */
export function hasCode(err: unknown, code: ErrorCode): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}

export class ValidationError extends AppError {
  override name = 'ValidationError';
  constructor(message: string, fields?: FieldErrors, options?: ErrorCause) {
    super(400, 'validation_error', message, fields, undefined, options);
  }
  /** A 400 that names one field. */
  static field(field: string, message: string): ValidationError {
    return new ValidationError(`Invalid ${field}: ${message}`, { [field]: [message] });
  }
}

export class UnauthorizedError extends AppError {
  override name = 'UnauthorizedError';
  constructor(message = 'Authentication credentials were not provided or are invalid', options?: ErrorCause) {
    super(401, 'unauthorized', message, undefined, { 'WWW-Authenticate': 'Bearer' }, options);
  }
}

export class ForbiddenError extends AppError {
  override name = 'ForbiddenError';
  constructor(message = 'You do not have permission to perform this action', options?: ErrorCause) {
    super(403, 'forbidden', message, undefined, undefined, options);
  }
}

export class NotFoundError extends AppError {
  override name = 'NotFoundError';
  constructor(message = 'Not found', options?: ErrorCause) {
    super(404, 'not_found', message, undefined, undefined, options);
  }
}

export class MethodNotAllowedError extends AppError {
  override name = 'MethodNotAllowedError';
  constructor(method: string, allow: string[]) {
    super(405, 'method_not_allowed', `Method "${method}" not allowed`, undefined, {
      Allow: allow.join(', '),
    });
  }
}

export class ConflictError extends AppError {
  override name = 'ConflictError';
  constructor(message: string, options?: ErrorCause) {
    super(409, 'conflict', message, undefined, undefined, options);
  }
}

/**
 * A conflict that passes with time (concurrent writers won every retry): a 409 whose `Retry-After` tells the caller
 * when to send the same request again. A conflict that retrying cannot resolve is a plain ConflictError.
 */
export class RetryableConflictError extends AppError {
  override name = 'RetryableConflictError';
  constructor(message: string, retryAfterSeconds = 1, options?: ErrorCause) {
    super(409, 'conflict', message, undefined, { 'Retry-After': String(retryAfterSeconds) }, options);
  }
}

/** The data store throttled the request past its retries: a 503 with `Retry-After`. */
export class BusyError extends AppError {
  override name = 'BusyError';
  constructor(message: string, retryAfterSeconds = 1, options?: ErrorCause) {
    super(503, 'busy', message, undefined, { 'Retry-After': String(retryAfterSeconds) }, options);
  }
}

/** The payload was unreadable (not JSON, wrong content type). */
export class BadRequestError extends AppError {
  override name = 'BadRequestError';
  constructor(message: string, options?: ErrorCause) {
    super(400, 'bad_request', message, undefined, undefined, options);
  }
}
