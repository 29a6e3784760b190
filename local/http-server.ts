import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { ErrorCode } from '#functions/shared/errors.js';
import type { ApiFunction } from '#lib/api-manifest.js';
import { corsHeaders, preflightHeaders } from '#lib/cors.js';

type LambdaHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

/**
 * A small Node HTTP server that plays API Gateway (HTTP API, payload v2): it turns each request into an
 * APIGatewayProxyEventV2 and calls the same Lambda handler modules that run on AWS, picked with the same manifest
 * the CDK stack uses.
 */
export interface LocalApiOptions {
  functions: ApiFunction[];
  /** Loads a handler module by its manifest entry (dynamic import of the .ts file). */
  load: (entry: string) => Promise<LambdaHandler>;
  /** Answers before routing, e.g. /health while the stack is still starting. Return null to go on. */
  intercept?: (req: IncomingMessage) => { status: number; body: unknown } | null;
  /**
   * Browser origins allowed by CORS (the dashboard's), applied like API Gateway's corsPreflight: preflights are
   * answered here and every answer to an allowed origin gets the Access-Control-* headers (lib/cors.ts).
   */
  corsOrigins?: readonly string[];
  /** Sees every answer the server sends, with its request (the contract test checks them against the documents). */
  observe?: (exchange: Exchange) => void;
}

/** One request and the answer the server sent to it. */
export interface Exchange {
  method: string;
  /** The path, without the query string. */
  path: string;
  requestHeaders: Record<string, string | string[] | undefined>;
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

function templateRegex(path: string): RegExp {
  return new RegExp(`^${path.replace(/\{\w+\}/g, '[^/]+')}/?$`);
}

export function toEvent(req: IncomingMessage, body: Buffer, routeKey: string): APIGatewayProxyEventV2 {
  const url = new URL(req.url ?? '/', 'http://local');
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(',') : v;
  }
  headers['x-forwarded-proto'] ??= 'http';
  const host = headers.host ?? 'localhost';
  const contentType = headers['content-type'] ?? '';
  const textual =
    body.length === 0 || /json|text|x-www-form-urlencoded|graphql/.test(contentType) || !contentType;
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = query[k] === undefined ? v : `${query[k]},${v}`;
  const requestId = randomUUID();
  return {
    version: '2.0',
    routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    queryStringParameters: Object.keys(query).length ? query : undefined,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: host,
      domainPrefix: host.split('.')[0],
      http: {
        method: req.method ?? 'GET',
        path: url.pathname,
        protocol: 'HTTP/1.1',
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey,
      stage: '$default',
      time: new Date().toISOString(),
      timeEpoch: Date.now(),
    },
    body: body.length ? (textual ? body.toString('utf8') : body.toString('base64')) : undefined,
    isBase64Encoded: body.length > 0 && !textual,
  };
}

export function lambdaContext(requestId: string): Context {
  return {
    awsRequestId: requestId,
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'local',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:local:000000000000:function:local',
    logGroupName: 'local',
    logStreamName: 'local',
    memoryLimitInMB: '512',
    getRemainingTimeInMillis: () => 30_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

function send(res: ServerResponse, result: APIGatewayProxyStructuredResultV2): Buffer {
  const headers = { ...(result.headers ?? {}) } as Record<string, string | number | boolean>;
  const body = result.body
    ? result.isBase64Encoded
      ? Buffer.from(result.body, 'base64')
      : Buffer.from(result.body, 'utf8')
    : Buffer.alloc(0);
  headers['Content-Length'] = body.length;
  res.writeHead(result.statusCode ?? 200, headers as Record<string, string>);
  res.end(body);
  return body;
}

/**
 * Lambda's limit on a synchronous invocation's payload: API Gateway answers 413 above it before any function runs.
 * The server does the same (and stops reading), so a huge body never reaches a handler or fills memory.
 */
export const MAX_EVENT_BYTES = 6 * 1024 * 1024;

/** Adds the CORS headers for an allowed origin, merging Vary as API Gateway does. */
function withCors(
  result: APIGatewayProxyStructuredResultV2,
  origin: string | undefined,
  allowOrigins: readonly string[],
): APIGatewayProxyStructuredResultV2 {
  const cors = corsHeaders(origin, allowOrigins);
  if (!cors) return result;
  const headers = { ...(result.headers ?? {}) } as Record<string, string>;
  const vary = headers.Vary ? `${headers.Vary}, ${cors.Vary}` : cors.Vary;
  return { ...result, headers: { ...headers, ...cors, Vary: vary } };
}

export function createLocalApi(options: LocalApiOptions): Server {
  const table = options.functions.flatMap((fn) =>
    fn.paths.map((path) => ({ fn, path, regex: templateRegex(path), routeKey: `ANY ${path}` })),
  );
  const cache = new Map<string, Promise<LambdaHandler>>();
  const allowOrigins = options.corsOrigins ?? [];
  const server = createServer((req, res) => {
    const origin = req.headers.origin;
    const reply = (result: APIGatewayProxyStructuredResultV2) => {
      const answer = withCors(result, origin, allowOrigins);
      const body = send(res, answer);
      options.observe?.({
        method: req.method ?? 'GET',
        path: new URL(req.url ?? '/', 'http://local').pathname,
        requestHeaders: req.headers,
        status: answer.statusCode ?? 200,
        headers: (answer.headers ?? {}) as Record<string, string>,
        body,
      });
    };
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_EVENT_BYTES) tooLarge = true;
      else chunks.push(c);
    });
    req.on('end', async () => {
      if (tooLarge) {
        reply({
          statusCode: 413,
          headers: { 'Content-Type': 'application/json', Connection: 'close' },
          body: JSON.stringify({
            error: {
              code: 'payload_too_large' satisfies ErrorCode,
              message: `Request body is larger than ${MAX_EVENT_BYTES} bytes`,
              fields: { body: [`must be at most ${MAX_EVENT_BYTES} bytes`] },
            },
          }),
        });
        return;
      }
      try {
        if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
          // A preflight is API Gateway's to answer (corsPreflight); it never reaches a handler.
          const allowed = corsHeaders(origin, allowOrigins) !== null;
          reply({ statusCode: 204, headers: allowed ? preflightHeaders() : {} });
          return;
        }
        const early = options.intercept?.(req);
        if (early) {
          reply({
            statusCode: early.status,
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify(early.body),
          });
          return;
        }
        const pathname = new URL(req.url ?? '/', 'http://local').pathname;
        const hit = table.find((r) => r.regex.test(pathname));
        if (!hit) {
          // API Gateway's own answer for an unknown route, in our JSON error shape.
          reply({
            statusCode: 404,
            headers: { 'Content-Type': 'application/json', Vary: 'Accept' },
            body: JSON.stringify({
              error: { code: 'not_found' satisfies ErrorCode, message: 'No such resource' },
            }),
          });
          return;
        }
        let load = cache.get(hit.fn.entry);
        if (!load) {
          load = options.load(hit.fn.entry);
          cache.set(hit.fn.entry, load);
          // A module that failed to load (not written yet, a syntax error being fixed) is tried again next time.
          load.catch(() => cache.delete(hit.fn.entry));
        }
        const handler = await load;
        const event = toEvent(req, Buffer.concat(chunks), hit.routeKey);
        reply(await handler(event, lambdaContext(event.requestContext.requestId)));
      } catch (err) {
        process.stderr.write(`local api error: ${err instanceof Error ? err.stack : String(err)}\n`);
        reply({
          statusCode: 500,
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({
            error: { code: 'internal_error' satisfies ErrorCode, message: 'Internal server error' },
          }),
        });
      }
    });
  });
  // Requests Node refuses before any handler runs (headers over 16 KB, malformed HTTP) still get the JSON error body
  // every other error has; API Gateway answers these itself.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const status = tooLarge ? 431 : 400;
    const body = JSON.stringify({
      error: {
        code: tooLarge ? 'headers_too_large' : 'bad_request',
        message: tooLarge ? 'Request headers are too large' : 'Malformed HTTP request',
      },
    });
    socket.end(
      `HTTP/1.1 ${status} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return server;
}
