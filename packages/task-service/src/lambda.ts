import type { TaskService } from './service.js';

/**
 * The part of a Lambda function URL's event (payload format 2.0) that the kit reads.
 *
 * @example
 * ```ts
 * import type { FunctionUrlEvent } from '@release-coordinator/task-service';
 *
 * const event: FunctionUrlEvent = { rawPath: '/status', requestContext: { http: { method: 'GET' } } };
 * ```
 */
export interface FunctionUrlEvent {
  rawPath: string;
  headers?: Record<string, string | undefined>;
  body?: string;
  isBase64Encoded?: boolean;
  requestContext: { http: { method: string } };
}

/**
 * A Lambda function URL's answer.
 *
 * @example
 * ```ts
 * import type { FunctionUrlResult } from '@release-coordinator/task-service';
 *
 * const result: FunctionUrlResult = { statusCode: 200, headers: {}, body: '{"name":"stager"}' };
 * ```
 */
export interface FunctionUrlResult {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * The kit as a Lambda function behind a function URL: the function URL's event to the same core, and its answer
 * back. Create the service with `run: 'inline'` (lambdaFromEnv does), since Lambda freezes the function once it has
 * answered: the work runs before the answer, and must end within the action timeout.
 *
 * @example
 * ```ts
 * import { createTaskService, dynamoDbStore, functionUrlHandler } from '@release-coordinator/task-service';
 *
 * export const handler = functionUrlHandler(
 *   createTaskService(work, {
 *     name: 'stager',
 *     auth: { mode: 'jwks', issuer: 'https://auth.example.org' },
 *     store: dynamoDbStore({ table: 'stager-tasks' }),
 *     run: 'inline',
 *   }),
 * );
 * ```
 */
export function functionUrlHandler(service: TaskService) {
  return async (event: FunctionUrlEvent): Promise<FunctionUrlResult> => {
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(event.headers ?? {})) headers[name.toLowerCase()] = value;
    const body = event.body
      ? event.isBase64Encoded
        ? Buffer.from(event.body, 'base64').toString('utf8')
        : event.body
      : '';
    const answer = await service.handle({
      method: event.requestContext.http.method,
      path: event.rawPath,
      headers,
      body,
    });
    return { statusCode: answer.status, headers: answer.headers, body: answer.body };
  };
}
