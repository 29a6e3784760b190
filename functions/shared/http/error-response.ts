import { type AppError, BusyError, type ErrorCode, isAppError, RetryableConflictError } from '../errors.js';
import { log } from '../log.js';
import { readableStack } from '../stack-trace.js';
import type { Response } from './response.js';

/** What an error body is made of, whatever shape an API renders it in. */
export interface ErrorFacts {
  status: number;
  code: ErrorCode;
  message: string;
  fields?: Record<string, string[]>;
  /** Structured facts of the error (AppError.details), beside the message. */
  details?: Record<string, unknown>;
}

/** The project's error body: `{"error": {"code", "message", "fields"?, ...details}}`. */
export const standardErrorBody = (e: ErrorFacts) => ({
  error: { ...e.details, code: e.code, message: e.message, ...(e.fields ? { fields: e.fields } : {}) },
});

/**
 * DynamoDB's answers that pass with time, when they outlast the SDK's and the store's retries: throttling is a 503
 * and a transaction conflict a 409, both with `Retry-After`, so the caller sends the request again rather than
 * reading a 500 as a failure.
 */
function passesWithTime(err: unknown): AppError | null {
  const e = err as { name?: unknown; $retryable?: { throttling?: boolean } };
  if (!e || typeof e !== 'object') return null;
  const throttled =
    e.$retryable?.throttling === true ||
    ['ThrottlingException', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded'].includes(
      String(e.name),
    );
  if (throttled) return new BusyError('The data store is throttling requests; retry', 1, { cause: err });
  if (e.name === 'TransactionConflictException')
    return new RetryableConflictError('A concurrent change is in progress; retry', 1, { cause: err });
  return null;
}

/** Maps anything thrown to an HTTP response. Only AppErrors (4xx) expose their message. */
export function toErrorResponse(
  err: unknown,
  requestId: string,
  renderBody: (e: ErrorFacts) => unknown = standardErrorBody,
): Response {
  const later = isAppError(err) ? null : passesWithTime(err);
  if (later) {
    log.warn('answered retry-later', { requestId, status: later.status, error: String(err) });
    err = later;
  }
  if (isAppError(err)) {
    const facts = {
      status: err.status,
      code: err.code,
      message: err.message,
      fields: err.fields,
      details: err.details,
    };
    return { status: err.status, body: renderBody(facts), headers: err.headers };
  }
  log.error('unhandled error', { requestId, error: readableStack(err) });
  const facts: ErrorFacts = {
    status: 500,
    code: 'internal_error',
    message: `Internal server error (request ${requestId})`,
  };
  return { status: 500, body: renderBody(facts) };
}
