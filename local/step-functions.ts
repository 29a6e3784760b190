import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ExecutionAbortedError, ExecutionTimeoutError, StateMachine } from 'aws-local-stepfunctions';
import { WORKER_FUNCTIONS } from '#lib/orchestration-manifest.js';
import { loadHandlerModule } from './handlers.js';

/**
 * A local Step Functions endpoint: an HTTP server speaking the Step Functions JSON protocol (POST /,
 * X-Amz-Target: AWSStepFunctions.<Op>, application/x-amz-json-1.0) for the operations the handlers and the benchmark
 * use, backed by aws-local-stepfunctions running the REAL statemachines/release.asl.json with the same
 * DefinitionSubstitutions as CDK (fake Lambda ARNs). The handlers talk to it through the real @aws-sdk/client-sfn,
 * pointed here by AWS_ENDPOINT_URL_SFN; nothing in functions/ knows it is local.
 *
 * What it adds to the library (ceilings.md part B):
 * - Task states whose resource is a worker function of lib/orchestration-manifest.ts call that handler in-process
 *   (taskResourceLocalHandlers, keyed by state name, derived from the definition).
 * - `lambda:invoke.waitForTaskToken`: the library has one fixed $$.Task.Token per execution, so every entry into a
 *   callback state gets a FRESH token (replacing the per-execution placeholder in the payload). SendTaskSuccess /
 *   SendTaskFailure settle the matching wait; a token that is no longer waiting answers TaskTimedOut, like AWS.
 * - A callback state's own timer ("timeoutSeconds" in its payload, or `waitMs`) rejects with States.Timeout, which
 *   the definition's Catch handles exactly like an AWS task timeout; stop() cancels every pending waiter, because
 *   the library's abort does not reach an in-flight override (pitfall iii).
 * - StartExecution is idempotent for a name whose execution is RUNNING with the same input, and otherwise refuses
 *   a used name with ExecutionAlreadyExists, as on AWS (Standard workflows).
 */
export interface StepFunctionsOptions {
  /** 0 (default) = a random free port. */
  port?: number;
  host?: string;
  /** Defaults to statemachines/release.asl.json. */
  definitionPath?: string;
  stateMachineName?: string;
  region?: string;
  accountId?: string;
  /** Loads a worker handler module by its manifest entry; defaults to the LOCAL_HANDLERS switch (local/handlers.ts). */
  load?: (entry: string) => Promise<{ handler: WorkerHandler }>;
  /**
   * Milliseconds a callback state waits before States.Timeout, given the state name and the timeout the definition
   * asked for (seconds). Tests use it to poll faster than the 1 s minimum of TimeoutSecondsPath.
   */
  waitMs?: (stateName: string, timeoutSeconds: number) => number;
  /** Replaces every Retry interval (ms), e.g. 0 in tests. */
  retryIntervalMs?: number;
  /** How many closed executions are kept for DescribeExecution / GetExecutionHistory (oldest dropped first). */
  keepClosed?: number;
}

export type WorkerHandler = (event: any, context?: any) => Promise<unknown>;

export interface LocalStepFunctions {
  env: { AWS_ENDPOINT_URL_SFN: string; RELEASE_STATE_MACHINE_ARN: string };
  endpoint: string;
  stateMachineArn: string;
  /** StateEntered events of an execution (by name or ARN) so far: what AWS bills as state transitions. */
  transitions(nameOrArn: string): number;
  /** Resolves when no execution is running (or after `timeoutMs`, returning false). */
  idle(timeoutMs?: number): Promise<boolean>;
  stop(): Promise<void>;
}

type Status = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED';

interface HistoryEvent {
  id: number;
  previousEventId: number;
  timestamp: number;
  type: string;
  [details: string]: unknown;
}

interface Execution {
  arn: string;
  name: string;
  input: string;
  status: Status;
  startDate: number;
  stopDate?: number;
  output?: string;
  error?: string;
  cause?: string;
  history: HistoryEvent[];
  stateEntered: number;
  tokens: Set<string>;
  abort: () => void;
  done: Promise<void>;
}

interface Waiter {
  execution: Execution;
  resolve: (output: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

class SfnError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CALLBACK = 'arn:aws:states:::lambda:invoke.waitForTaskToken';
const INVOKE = 'arn:aws:states:::lambda:invoke';
const TOKEN = /^[A-Za-z0-9_-]{40}$/;
const NAME = /^[A-Za-z0-9_-]{1,80}$/;

function named(name: string, message: string): Error {
  const err = new Error(message);
  err.name = name;
  return err;
}

function lambdaContext(functionName: string, arn: string) {
  return {
    awsRequestId: randomUUID(),
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: arn,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    memoryLimitInMB: '512',
    getRemainingTimeInMillis: () => 300_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

/** Replaces every string equal to `from` inside a JSON value. */
function replaceString(value: unknown, from: string, to: string): unknown {
  if (value === from) return to;
  if (Array.isArray(value)) return value.map((v) => replaceString(v, from, to));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceString(v, from, to)]));
  return value;
}

/** The definition with the CDK substitutions applied (same keys, fake ARNs). Exported for tests. */
export function localDefinition(
  opts: { definitionPath?: string; region?: string; accountId?: string } = {},
): { definition: any; functionArns: Map<string, string> } {
  const region = opts.region ?? 'us-east-1';
  const account = opts.accountId ?? '000000000000';
  let text = readFileSync(opts.definitionPath ?? resolve(ROOT, 'statemachines/release.asl.json'), 'utf8');
  const functionArns = new Map<string, string>();
  for (const fn of WORKER_FUNCTIONS) {
    if (!fn.substitution) continue;
    const arn = `arn:aws:lambda:${region}:${account}:function:${fn.name}`;
    functionArns.set(arn, fn.entry);
    text = text.replaceAll(`\${${fn.substitution}}`, arn);
  }
  const missing = /\$\{(\w+)\}/.exec(text);
  if (missing) throw new Error(`No substitution for \${${missing[1]}} in lib/orchestration-manifest.ts`);
  return { definition: JSON.parse(text), functionArns };
}

export async function startStepFunctions(opts: StepFunctionsOptions = {}): Promise<LocalStepFunctions> {
  const region = opts.region ?? process.env.AWS_REGION ?? 'us-east-1';
  const account = opts.accountId ?? '000000000000';
  const smName = opts.stateMachineName ?? 'ReleaseStateMachine';
  const smArn = `arn:aws:states:${region}:${account}:stateMachine:${smName}`;
  const { definition, functionArns } = localDefinition({ ...opts, region, accountId: account });
  const machine = new StateMachine(definition);
  const load = opts.load ?? ((entry: string) => loadHandlerModule<{ handler: WorkerHandler }>(entry));
  const handlers = new Map<string, Promise<WorkerHandler>>();
  const handlerFor = (arn: string): Promise<WorkerHandler> => {
    const entry = functionArns.get(arn);
    if (!entry) return Promise.reject(named('Lambda.ResourceNotFoundException', `No local function ${arn}`));
    let h = handlers.get(entry);
    if (!h) {
      h = load(entry).then((m) => m.handler);
      handlers.set(entry, h);
    }
    return h;
  };

  const executions = new Map<string, Execution>(); // by ARN
  const closed: string[] = [];
  const waiters = new Map<string, Waiter>();
  const keepClosed = opts.keepClosed ?? 2000;

  const settleWaiter = (token: string): Waiter | undefined => {
    const w = waiters.get(token);
    if (!w) return undefined;
    waiters.delete(token);
    w.execution.tokens.delete(token);
    clearTimeout(w.timer);
    return w;
  };

  /** One override per Task state, keyed by state name (the library's convention). */
  const overridesFor = (execution: Execution, placeholder: string) => {
    const out: Record<string, (input: any) => Promise<any>> = {};
    for (const [stateName, state] of Object.entries<any>(definition.States)) {
      if (state.Type !== 'Task') continue;
      const fnArn = state.Resource === CALLBACK || state.Resource === INVOKE ? undefined : state.Resource;
      if (state.Resource === CALLBACK) {
        out[stateName] = (input) =>
          new Promise((resolvePromise, rejectPromise) => {
            const token = randomBytes(30).toString('base64url');
            const payload = replaceString(input.Payload, placeholder, token) as Record<string, unknown>;
            const seconds = Number(payload?.timeoutSeconds ?? 60);
            const ms = opts.waitMs?.(stateName, seconds) ?? seconds * 1000;
            const timer = setTimeout(() => {
              if (settleWaiter(token)) rejectPromise(named('States.Timeout', `no callback within ${ms} ms`));
            }, ms);
            waiters.set(token, { execution, resolve: resolvePromise, reject: rejectPromise, timer });
            execution.tokens.add(token);
            const fn = String(input.FunctionName);
            handlerFor(fn)
              .then((h) => h(payload, lambdaContext(fn.split(':').pop() ?? fn, fn)))
              .catch((err: Error) => {
                if (settleWaiter(token)) rejectPromise(err);
              });
          });
      } else if (state.Resource === INVOKE) {
        out[stateName] = async (input) => {
          const fn = String(input.FunctionName);
          const h = await handlerFor(fn);
          const payload = await h(input.Payload, lambdaContext(fn.split(':').pop() ?? fn, fn));
          return { StatusCode: 200, ExecutedVersion: '$LATEST', Payload: payload ?? null };
        };
      } else if (fnArn && functionArns.has(fnArn)) {
        out[stateName] = async (input) => {
          const h = await handlerFor(fnArn);
          return ((await h(input, lambdaContext(fnArn.split(':').pop() ?? fnArn, fnArn))) ?? null) as any;
        };
      }
    }
    return out;
  };

  const retryIntervalOverrides =
    opts.retryIntervalMs === undefined
      ? undefined
      : Object.fromEntries(Object.keys(definition.States).map((s) => [s, opts.retryIntervalMs as number]));

  const record = (execution: Execution, type: string, details: Record<string, unknown> = {}) => {
    const id = execution.history.length + 1;
    execution.history.push({ id, previousEventId: id - 1, timestamp: Date.now() / 1000, type, ...details });
  };

  const close = (execution: Execution, status: Status, extra: Partial<Execution> = {}) => {
    if (execution.status !== 'RUNNING') return;
    Object.assign(execution, extra, { status, stopDate: Date.now() / 1000 });
    // Resolve (not reject) the abandoned waits: the library's loop then sees the abort and stops quietly, where a
    // rejection would surface as an unhandled ExecutionError after the run already settled.
    for (const token of [...execution.tokens]) settleWaiter(token)?.resolve({ aborted: true });
    closed.push(execution.arn);
    while (closed.length > keepClosed) executions.delete(closed.shift() as string);
  };

  const startExecution = (body: any) => {
    if (body.stateMachineArn !== smArn)
      throw new SfnError(
        'StateMachineDoesNotExist',
        `State Machine Does Not Exist: '${body.stateMachineArn}'`,
      );
    const name: string = body.name ?? randomUUID();
    if (!NAME.test(name)) throw new SfnError('InvalidName', `Invalid Name: '${name}'`);
    const input: string = body.input ?? '{}';
    let parsed: unknown;
    try {
      parsed = JSON.parse(input);
    } catch {
      throw new SfnError('InvalidExecutionInput', 'Invalid execution input: not JSON');
    }
    const arn = `arn:aws:states:${region}:${account}:execution:${smName}:${name}`;
    const existing = executions.get(arn);
    if (existing) {
      if (existing.status === 'RUNNING' && existing.input === input)
        return { executionArn: arn, startDate: existing.startDate };
      throw new SfnError('ExecutionAlreadyExists', `Execution Already Exists: '${arn}'`);
    }
    const placeholder = `local-placeholder-${randomUUID()}`;
    const execution: Execution = {
      arn,
      name,
      input,
      status: 'RUNNING',
      startDate: Date.now() / 1000,
      history: [],
      stateEntered: 0,
      tokens: new Set(),
      abort: () => {},
      done: Promise.resolve(),
    };
    executions.set(arn, execution);
    const run = machine.run(parsed as any, {
      overrides: { taskResourceLocalHandlers: overridesFor(execution, placeholder), retryIntervalOverrides },
      context: {
        Execution: { Id: arn, Name: name, RoleArn: `arn:aws:iam::${account}:role/local` },
        StateMachine: { Id: smArn, Name: smName },
        Task: { Token: placeholder },
      },
    });
    execution.abort = run.abort;
    const drained = (async () => {
      for await (const e of run.eventLogs as AsyncGenerator<any>) {
        switch (e.type) {
          case 'ExecutionStarted':
            record(execution, 'ExecutionStarted', {
              executionStartedEventDetails: { input, roleArn: `arn:aws:iam::${account}:role/local` },
            });
            break;
          case 'StateEntered':
            execution.stateEntered++;
            record(execution, `${e.state.type}StateEntered`, {
              stateEnteredEventDetails: { name: e.state.name, input: JSON.stringify(e.state.input) },
            });
            break;
          case 'StateExited':
            record(execution, `${e.state.type}StateExited`, {
              stateExitedEventDetails: { name: e.state.name, output: JSON.stringify(e.state.output ?? null) },
            });
            break;
          case 'StateFailed':
            record(execution, 'TaskFailed', {
              taskFailedEventDetails: { error: e.Error, cause: String(e.Cause) },
            });
            break;
          case 'ExecutionSucceeded':
            record(execution, 'ExecutionSucceeded', {
              executionSucceededEventDetails: { output: JSON.stringify(e.output ?? null) },
            });
            break;
          case 'ExecutionFailed':
            record(execution, 'ExecutionFailed', {
              executionFailedEventDetails: { error: e.Error, cause: String(e.Cause) },
            });
            break;
          case 'ExecutionAborted':
            record(execution, 'ExecutionAborted', {});
            break;
          case 'ExecutionTimeout':
            record(execution, 'ExecutionTimedOut', {});
            break;
          default:
            break; // StateRetried / StateCaught have no history event of their own on AWS
        }
      }
    })();
    const settled = run.result.then(
      (output) => close(execution, 'SUCCEEDED', { output: JSON.stringify(output ?? null) }),
      (err: any) => {
        if (err instanceof ExecutionAbortedError) close(execution, 'ABORTED');
        else if (err instanceof ExecutionTimeoutError) close(execution, 'TIMED_OUT');
        else {
          const cause = err?.cause;
          close(execution, 'FAILED', {
            error: cause?.name ?? err?.name ?? 'States.Runtime',
            cause: String(cause?.message ?? err?.message ?? ''),
          });
          if (!process.env.VITEST && !(cause?.name ?? '').startsWith('Orchestration.'))
            process.stderr.write(`local step functions: ${name} failed: ${cause?.name}: ${cause?.message}\n`);
        }
      },
    );
    execution.done = Promise.all([drained, settled]).then(() => {});
    return { executionArn: arn, startDate: execution.startDate };
  };

  const executionOf = (arn: string): Execution => {
    const e = executions.get(arn);
    if (!e) throw new SfnError('ExecutionDoesNotExist', `Execution Does Not Exist: '${arn}'`);
    return e;
  };

  const takeToken = (token: string): Waiter => {
    if (typeof token !== 'string' || !TOKEN.test(token)) throw new SfnError('InvalidToken', 'Invalid Token');
    const w = settleWaiter(token);
    // Well-formed but not waiting (answered, timed out, or from before a restart): what AWS answers for a stale token.
    if (!w) throw new SfnError('TaskTimedOut', "Task Timed Out: 'Provided task does not exist anymore'");
    return w;
  };

  const ops: Record<string, (body: any) => unknown> = {
    StartExecution: startExecution,
    DescribeExecution: (body) => {
      const e = executionOf(body.executionArn);
      return {
        executionArn: e.arn,
        stateMachineArn: smArn,
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
      const e = executionOf(body.executionArn);
      if (e.status === 'RUNNING') {
        e.abort();
        close(e, 'ABORTED', { error: body.error, cause: body.cause });
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
      takeToken(body.taskToken).resolve(output);
      return {};
    },
    SendTaskFailure: (body) => {
      const w = takeToken(body.taskToken);
      w.reject(named(body.error ?? 'States.TaskFailed', body.cause ?? ''));
      return {};
    },
    SendTaskHeartbeat: (body) => {
      if (!waiters.has(body.taskToken)) takeToken(body.taskToken);
      return {};
    },
    GetExecutionHistory: (body) => {
      const e = executionOf(body.executionArn);
      const all = body.reverseOrder ? [...e.history].reverse() : e.history;
      const start = Number(body.nextToken ?? 0);
      const max = Math.min(Number(body.maxResults || 1000), 1000);
      const events = all.slice(start, start + max);
      const next = start + max < all.length ? String(start + max) : undefined;
      return { events, nextToken: next };
    },
    ListExecutions: (body) => {
      const list = [...executions.values()]
        .filter((e) => !body.statusFilter || e.status === body.statusFilter)
        .sort((a, b) => b.startDate - a.startDate)
        .map((e) => ({
          executionArn: e.arn,
          stateMachineArn: smArn,
          name: e.name,
          status: e.status,
          startDate: e.startDate,
          stopDate: e.stopDate,
        }));
      return { executions: list.slice(0, Number(body.maxResults || 1000)) };
    },
    DescribeStateMachine: () => ({
      stateMachineArn: smArn,
      name: smName,
      status: 'ACTIVE',
      definition: JSON.stringify(definition),
      roleArn: `arn:aws:iam::${account}:role/local`,
      type: 'STANDARD',
      creationDate: 0,
    }),
  };

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
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
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => ok());
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://${opts.host ?? '127.0.0.1'}:${port}`;

  const running = () => [...executions.values()].filter((e) => e.status === 'RUNNING');
  return {
    env: { AWS_ENDPOINT_URL_SFN: endpoint, RELEASE_STATE_MACHINE_ARN: smArn },
    endpoint,
    stateMachineArn: smArn,
    transitions(nameOrArn) {
      const arn = nameOrArn.startsWith('arn:')
        ? nameOrArn
        : `arn:aws:states:${region}:${account}:execution:${smName}:${nameOrArn}`;
      return executions.get(arn)?.stateEntered ?? 0;
    },
    async idle(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (running().length) {
        if (Date.now() > deadline) return false;
        await Promise.race([
          Promise.all(running().map((e) => e.done)),
          new Promise((r) => setTimeout(r, 50)),
        ]);
      }
      return true;
    },
    async stop() {
      const live = running();
      for (const e of live) {
        e.abort();
        close(e, 'ABORTED', { error: 'Local.Stopped', cause: 'local Step Functions endpoint stopped' });
      }
      for (const token of [...waiters.keys()]) settleWaiter(token)?.resolve({ aborted: true });
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
      await Promise.race([Promise.all(live.map((e) => e.done)), new Promise((r) => setTimeout(r, 2000))]);
    },
  };
}
