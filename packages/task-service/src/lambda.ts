import type { TaskService } from './service.js';

/**
 * The kit as a Lambda function behind a function URL: the function URL's event (payload format 2.0) to the same
 * core, and its answer back. Create the service with `run: 'inline'` (lambdaFromEnv does), since Lambda freezes the
 * function once it has answered: the work runs before the answer, and must end within the action timeout.
 */
export interface FunctionUrlEvent {
  rawPath: string;
  headers?: Record<string, string | undefined>;
  body?: string;
  isBase64Encoded?: boolean;
  requestContext: { http: { method: string } };
}

export interface FunctionUrlResult {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

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
