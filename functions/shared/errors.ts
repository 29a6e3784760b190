/**
 * The one error model. Use cases throw these; `toHttpError` (http.ts) maps them to a status and the single JSON
 * error body `{ error: { code, message, fields? } }`. Only 4xx messages reach callers; anything else becomes a
 * generic 500 whose detail stays in the log.
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
    this.name = new.target.name;
  }
}

export class ValidationError extends AppError {
  constructor(message: string, fields?: FieldErrors) {
    super(400, 'validation_error', message, fields);
  }
  /** A 400 that names one field. */
  static field(field: string, message: string): ValidationError {
    return new ValidationError(`Invalid ${field}: ${message}`, { [field]: [message] });
  }
}

export class UnauthorizedError extends AppError {
  constructor(message = 'Authentication credentials were not provided or are invalid') {
    super(401, 'unauthorized', message, undefined, { 'WWW-Authenticate': 'Bearer' });
  }
}

export class ForbiddenError extends AppError {
  constructor(message = 'You do not have permission to perform this action') {
    super(403, 'forbidden', message);
  }
}

export class NotFoundError extends AppError {
  constructor(message = 'Not found') {
    super(404, 'not_found', message);
  }
}

export class MethodNotAllowedError extends AppError {
  constructor(method: string, allow: string[]) {
    super(405, 'method_not_allowed', `Method "${method}" not allowed`, undefined, {
      Allow: allow.join(', '),
    });
  }
}

export class ConflictError extends AppError {
  constructor(message: string) {
    super(409, 'conflict', message);
  }
}

/** The payload was unreadable (not JSON, wrong content type). */
export class BadRequestError extends AppError {
  constructor(message: string) {
    super(400, 'bad_request', message);
  }
}
