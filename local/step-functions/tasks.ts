import { randomBytes, randomUUID } from 'node:crypto';
import { type Execution, named, type StepFunctionsOptions, type WorkerHandler } from './model.js';
import type { Waiters } from './waiters.js';

const CALLBACK = 'arn:aws:states:::lambda:invoke.waitForTaskToken';
const INVOKE = 'arn:aws:states:::lambda:invoke';

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

/** The worker handler behind a function ARN of the definition, loaded once. */
export function handlerLoader(
  functionArns: Map<string, string>,
  load: (entry: string) => Promise<{ handler: WorkerHandler }>,
): (arn: string) => Promise<WorkerHandler> {
  const handlers = new Map<string, Promise<WorkerHandler>>();
  return (arn) => {
    const entry = functionArns.get(arn);
    if (!entry) return Promise.reject(named('Lambda.ResourceNotFoundException', `No local function ${arn}`));
    let h = handlers.get(entry);
    if (!h) {
      h = load(entry).then((m) => m.handler);
      handlers.set(entry, h);
    }
    return h;
  };
}

/**
 * The library's taskResourceLocalHandlers for one execution: one override per Task state, keyed by state name (the
 * library's convention), that calls the state's worker handler in this process.
 *
 * - `lambda:invoke.waitForTaskToken`: the library has one fixed $$.Task.Token per execution (`placeholder`), so every
 *   entry into a callback state gets a fresh token, put in the payload in the placeholder's place, and waits in
 *   `waiters` until SendTaskSuccess / SendTaskFailure settles it. Its own timer ("timeoutSeconds" in its payload, or
 *   `waitMs`) rejects with States.Timeout, which the definition's Catch handles as it does an AWS task timeout.
 * - `lambda:invoke`: answers the Lambda integration's shape ({StatusCode, Payload}).
 * - A function ARN as the resource: answers what the handler returns.
 */
export function taskOverrides(
  definition: any,
  execution: Execution,
  placeholder: string,
  deps: {
    handlerFor: (arn: string) => Promise<WorkerHandler>;
    functionArns: Map<string, string>;
    waiters: Waiters;
    waitMs: StepFunctionsOptions['waitMs'];
  },
): Record<string, (input: any) => Promise<any>> {
  const { handlerFor, functionArns, waiters } = deps;
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
          const ms = deps.waitMs?.(stateName, seconds) ?? seconds * 1000;
          const timer = setTimeout(() => {
            if (waiters.settle(token)) rejectPromise(named('States.Timeout', `no callback within ${ms} ms`));
          }, ms);
          waiters.add(token, { execution, resolve: resolvePromise, reject: rejectPromise, timer });
          const fn = String(input.FunctionName);
          handlerFor(fn)
            .then((h) => h(payload, lambdaContext(fn.split(':').pop() ?? fn, fn)))
            .catch((err: Error) => {
              if (waiters.settle(token)) rejectPromise(err);
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
}
