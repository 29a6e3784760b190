/**
 * The one error model. Use cases throw these; `toErrorResponse` (http.ts) maps them to a status and the single JSON
 * error body `{ error: { code, message, fields? } }`. Only 4xx messages reach callers; anything else becomes a
 * generic 500 whose detail stays in the log.
 *
 * The deployed bundles are minified, so a class's own name is not stable (`NotFoundError` may become `sf`), and a
 * bundle holds its own copy of every class. Errors are therefore recognised by their `code` (`hasCode`,
 * `isAppError`), never by a class name or by `instanceof` across module boundaries, and every `name` is a string
 * literal (Step Functions matches Lambda errors by name).
 */
export type FieldErrors = Record<string, string[]>;

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields?: FieldErrors,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
  override name = 'AppError';
}

/** True for an AppError from any bundle or module copy: recognised by its shape, not by class identity. */
export function isAppError(err: unknown): err is AppError {
  if (!(err instanceof Error)) return false;
  const e = err as Partial<AppError>;
  return typeof e.status === 'number' && typeof e.code === 'string';
}

/** True when `err` carries the stable error code `code` (AppError codes, TransientError's, AWS SDK codes). */
export function hasCode(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}

export class ValidationError extends AppError {
  override name = 'ValidationError';
  constructor(message: string, fields?: FieldErrors) {
    super(400, 'validation_error', message, fields);
  }
  /** A 400 that names one field. */
  static field(field: string, message: string): ValidationError {
    return new ValidationError(`Invalid ${field}: ${message}`, { [field]: [message] });
  }
}

export class UnauthorizedError extends AppError {
  override name = 'UnauthorizedError';
  constructor(message = 'Authentication credentials were not provided or are invalid') {
    super(401, 'unauthorized', message, undefined, { 'WWW-Authenticate': 'Bearer' });
  }
}

export class ForbiddenError extends AppError {
  override name = 'ForbiddenError';
  constructor(message = 'You do not have permission to perform this action') {
    super(403, 'forbidden', message);
  }
}

export class NotFoundError extends AppError {
  override name = 'NotFoundError';
  constructor(message = 'Not found') {
    super(404, 'not_found', message);
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
  constructor(message: string) {
    super(409, 'conflict', message);
  }
}

/** The payload was unreadable (not JSON, wrong content type). */
export class BadRequestError extends AppError {
  override name = 'BadRequestError';
  constructor(message: string) {
    super(400, 'bad_request', message);
  }
}
