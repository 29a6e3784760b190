import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Executions } from './executions.js';
import { type MachineIdentity, named, SfnError } from './model.js';
import type { Waiters } from './waiters.js';

/** The Step Functions API operations the handlers and the benchmarks use, on the local executions. */
export function operations(
  sm: MachineIdentity,
  definition: any,
  executions: Executions,
  waiters: Waiters,
): Record<string, (body: any) => unknown> {
  return {
    StartExecution: (body) => executions.start(body),
    DescribeExecution: (body) => {
      const e = executions.get(body.executionArn);
      return {
        executionArn: e.arn,
        stateMachineArn: sm.arn,
        name: e.name,
        status: e.status,
        startDate: e.startDate,
        stopDate: e.stopDate,
        input: e.input,
        output: e.output,
        error: e.error,
        cause: e.cause,
      };
    },
    StopExecution: (body) => {
      const e = executions.get(body.executionArn);
      if (e.status === 'RUNNING') {
        e.abort();
        executions.close(e, 'ABORTED', { error: body.error, cause: body.cause });
      }
      return { stopDate: e.stopDate };
    },
    SendTaskSuccess: (body) => {
      let output: unknown;
      try {
        output = JSON.parse(body.output ?? 'null');
      } catch {
        throw new SfnError('InvalidOutput', 'Invalid output: not JSON');
      }
      waiters.take(body.taskToken).resolve(output);
      return {};
    },
    SendTaskFailure: (body) => {
      const w = waiters.take(body.taskToken);
      w.reject(named(body.error ?? 'States.TaskFailed', body.cause ?? ''));
      return {};
    },
    SendTaskHeartbeat: (body) => {
      if (!waiters.has(body.taskToken)) waiters.take(body.taskToken);
      return {};
    },
    GetExecutionHistory: (body) => {
      const e = executions.get(body.executionArn);
      const all = body.reverseOrder ? [...e.history].reverse() : e.history;
      const start = Number(body.nextToken ?? 0);
      const max = Math.min(Number(body.maxResults || 1000), 1000);
      const events = all.slice(start, start + max);
      const next = start + max < all.length ? String(start + max) : undefined;
      return { events, nextToken: next };
    },
    ListExecutions: (body) => {
      const list = executions
        .all()
        .filter((e) => !body.statusFilter || e.status === body.statusFilter)
        .sort((a, b) => b.startDate - a.startDate)
        .map((e) => ({
          executionArn: e.arn,
          stateMachineArn: sm.arn,
          name: e.name,
          status: e.status,
          startDate: e.startDate,
          stopDate: e.stopDate,
        }));
      return { executions: list.slice(0, Number(body.maxResults || 1000)) };
    },
    DescribeStateMachine: () => ({
      stateMachineArn: sm.arn,
      name: sm.name,
      status: 'ACTIVE',
      definition: JSON.stringify(definition),
      roleArn: `arn:aws:iam::${sm.account}:role/local`,
      type: 'STANDARD',
      creationDate: 0,
    }),
  };
}

/**
 * The HTTP side: the Step Functions JSON protocol (POST /, X-Amz-Target: AWSStepFunctions.<Op>,
 * application/x-amz-json-1.0), answering each operation's output or its error as `__type` and `message`.
 */
export function apiServer(ops: Record<string, (body: any) => unknown>): Server {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const target = String(req.headers['x-amz-target'] ?? '');
      const op = target.startsWith('AWSStepFunctions.') ? target.slice('AWSStepFunctions.'.length) : '';
      const reply = (status: number, body: unknown) => {
        const text = JSON.stringify(body);
        res.writeHead(status, {
          'Content-Type': 'application/x-amz-json-1.0',
          'Content-Length': Buffer.byteLength(text),
          'x-amzn-RequestId': randomUUID(),
        });
        res.end(text);
      };
      try {
        const fn = ops[op];
        if (req.method !== 'POST' || !fn)
          throw new SfnError('UnknownOperationException', `Unknown operation ${target}`);
        const text = Buffer.concat(chunks).toString('utf8');
        reply(200, fn(text ? JSON.parse(text) : {}));
      } catch (err) {
        if (err instanceof SfnError)
          reply(400, { __type: `com.amazonaws.swf.service.v2.model#${err.type}`, message: err.message });
        else
          reply(500, {
            __type: 'InternalFailure',
            message: err instanceof Error ? err.message : String(err),
          });
      }
    });
  });
  server.keepAliveTimeout = 5000;
  return server;
}
