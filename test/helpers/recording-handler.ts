import { Readable } from 'node:stream';
import { HttpRequest, HttpResponse } from '@smithy/core/protocols';
import type { MiddlewareStack } from '@smithy/types';

/**
 * An HTTP handler for unit tests of AWS calls: it records every request it is given (as sent, signature included) and
 * answers with the canned responses queued on it, in order (the last one repeats). No network. Both the SDK clients
 * (`requestHandler`) and the signed-request core (functions/adapters/aws-http.ts) accept it, so a test can send the
 * same operation through both and compare what each would have put on the wire.
 */
export interface Canned {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface Sent {
  method: string;
  url: string;
  headers: [string, string][];
  body: string;
}

export class RecordingHandler {
  readonly requests: HttpRequest[] = [];
  private queue: Canned[] = [];

  answer(...responses: Canned[]): this {
    this.queue = responses;
    return this;
  }

  async handle(request: HttpRequest): Promise<{ response: HttpResponse }> {
    this.requests.push(HttpRequest.clone(request));
    const next = (this.queue.length > 1 ? this.queue.shift() : this.queue[0]) ?? {};
    const body = next.body === undefined ? Buffer.alloc(0) : Buffer.from(next.body);
    return {
      response: new HttpResponse({
        statusCode: next.status ?? 200,
        headers: { ...next.headers },
        body: Readable.from(body.length ? [body] : []),
      }),
    };
  }

  /** The last request, in a form two requests can be compared in: headers sorted, body as text. */
  last(): Sent {
    const r = this.requests.at(-1);
    if (!r) throw new Error('no request was sent');
    return sent(r);
  }

  updateHttpClientConfig() {}
  httpHandlerConfigs() {
    return {};
  }
  destroy() {}
}

export function sent(r: HttpRequest): Sent {
  const query = Object.entries(r.query)
    .map(([k, v]) => `${k}=${v}`)
    .sort()
    .join('&');
  return {
    method: r.method,
    url: `${r.protocol}//${r.hostname}${r.port ? `:${r.port}` : ''}${r.path}${query ? `?${query}` : ''}`,
    headers: Object.entries(r.headers)
      .map(([k, v]): [string, string] => [k.toLowerCase(), String(v)])
      .sort(([a], [b]) => a.localeCompare(b)),
    body: r.body === undefined ? '' : Buffer.from(r.body as string | Uint8Array).toString('utf8'),
  };
}

/**
 * Drops what an SDK client adds to every request for its own bookkeeping (user agent, invocation id, attempt
 * counter) before the request is signed, so the rest of the request, the signature included, can be compared with
 * one that never carries them.
 */
export function withoutSdkTelemetry(stack: MiddlewareStack<any, any>): void {
  stack.addRelativeTo(
    (next: (args: any) => Promise<any>) => async (args: any) => {
      const request = args.request as HttpRequest;
      for (const h of ['amz-sdk-invocation-id', 'amz-sdk-request', 'x-amz-user-agent', 'user-agent'])
        delete request.headers[h];
      return next(args);
    },
    {
      relation: 'before',
      toMiddleware: 'httpSigningMiddleware',
      name: 'withoutSdkTelemetry',
      override: true,
    },
  );
}
