import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'aws-lambda';
import { log } from '#functions/shared/log.js';
import type { AsyncWorkerFunction } from '#lib/orchestration-manifest.js';
import type { Component } from './component.js';
import { loadHandler } from './handlers.js';
import { lambdaContext } from './http-server.js';

type Worker = (event: unknown, context: Context) => Promise<unknown>;

/**
 * The Lambda Invoke API for the workers that other functions invoke (lib/orchestration-manifest.ts FILES_WORKERS,
 * COORDINATOR_INVOKED_WORKERS), so handlers call them with their real Invoke request (@aws-sdk/client-lambda's, from
 * functions/adapters/upload-verification.ts and gated-service-clients.ts) through AWS_ENDPOINT_URL_LAMBDA, as on AWS. `POST /2015-03-31/functions/<name>/invocations` with `X-Amz-Invocation-Type: Event` answers 202 and runs
 * the worker's handler module in this process afterwards (one at a time per function, like a reserved concurrency
 * of one); RequestResponse runs it and answers its result. A failed run is logged and retried twice, as Lambda
 * retries asynchronous invocations.
 */
export interface LocalLambda extends Component {
  /** Invocations still queued or running (tests wait for them). Never settles while paused with work queued. */
  idle(): Promise<void>;
  /**
   * Holds asynchronous runs (they are accepted and queued, not started) until `resume()`, so a test can look at
   * what the system answers before a worker has done its job. A run already started goes on.
   */
  pause(): void;
  resume(): void;
}

export interface LocalLambdaOptions {
  functions: AsyncWorkerFunction[];
  host?: string;
  port?: number;
  /** Pause between retries of a failed asynchronous run (Lambda waits minutes; tests want less). */
  retryDelayMs?: number;
}

const PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations\/?$/;

export async function startLocalLambda(opts: LocalLambdaOptions): Promise<LocalLambda> {
  const byName = new Map(opts.functions.map((f) => [f.name, f]));
  const queues = new Map<string, Promise<void>>();
  const pending = new Set<Promise<void>>();
  const retryDelayMs = opts.retryDelayMs ?? 1000;
  let gate: { held: Promise<void>; release: () => void } | null = null;

  const run = async (fn: AsyncWorkerFunction, event: unknown) => {
    const handler = await loadHandler<Worker>(fn.entry);
    // The function's own timeout, as Lambda reports it to the handler.
    const deadline = Date.now() + fn.timeoutSeconds * 1000;
    return handler(event, {
      ...lambdaContext(`${fn.name}-${Date.now()}`),
      getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    });
  };

  const enqueue = (fn: AsyncWorkerFunction, event: unknown) => {
    const previous = queues.get(fn.name) ?? Promise.resolve();
    const next = previous.then(async () => {
      while (gate) await gate.held;
      for (let attempt = 1; attempt <= 3; attempt++) {
        try {
          await run(fn, event);
          return;
        } catch (err) {
          log.error('local lambda: asynchronous run failed', {
            function: fn.name,
            attempt,
            error: err instanceof Error ? err.message : String(err),
          });
          if (attempt < 3) await new Promise((r) => setTimeout(r, retryDelayMs));
        }
      }
    });
    queues.set(fn.name, next);
    pending.add(next);
    next.finally(() => pending.delete(next));
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
        res.end(body === undefined ? '' : JSON.stringify(body));
      };
      const m = PATH.exec(new URL(req.url ?? '/', 'http://local').pathname);
      // The SDK sends the function's name or ARN: the last path element of an ARN is its name.
      const name = m ? (decodeURIComponent(m[1]).split(':').at(-1) ?? '') : '';
      const fn = byName.get(name);
      if (req.method !== 'POST' || !fn)
        return reply(
          404,
          { Type: 'User', message: `Function not found: ${name}` },
          {
            'x-amzn-ErrorType': 'ResourceNotFoundException',
          },
        );
      let event: unknown;
      try {
        const text = Buffer.concat(chunks).toString('utf8');
        event = text ? JSON.parse(text) : {};
      } catch {
        return reply(
          400,
          { message: 'Could not parse request body into json' },
          {
            'x-amzn-ErrorType': 'InvalidRequestContentException',
          },
        );
      }
      if ((req.headers['x-amz-invocation-type'] ?? 'RequestResponse') === 'Event') {
        enqueue(fn, event);
        return reply(202, undefined);
      }
      try {
        reply(200, (await run(fn, event)) ?? null);
      } catch (err) {
        reply(
          200,
          { errorMessage: err instanceof Error ? err.message : String(err) },
          {
            'X-Amz-Function-Error': 'Unhandled',
          },
        );
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    name: 'lambda',
    env: {
      AWS_ENDPOINT_URL_LAMBDA: endpoint,
      ...Object.fromEntries(opts.functions.map((f) => [f.nameEnv, f.name])),
    },
    urls: { 'Lambda (async workers)': endpoint },
    idle: async () => {
      while (pending.size) await Promise.allSettled([...pending]);
    },
    pause: () => {
      if (gate) return;
      let release = () => {};
      const held = new Promise<void>((r) => {
        release = r;
      });
      gate = { held, release };
    },
    resume: () => {
      const g = gate;
      gate = null;
      g?.release();
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
