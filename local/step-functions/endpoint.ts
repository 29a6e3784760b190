import type { AddressInfo } from 'node:net';
import { StateMachine } from 'aws-local-stepfunctions';
import { loadHandlerModule } from '../handlers.js';
import { apiServer, operations } from './api.js';
import { localDefinition } from './definition.js';
import { Executions } from './executions.js';
import type { LocalStepFunctions, MachineIdentity, StepFunctionsOptions, WorkerHandler } from './model.js';
import { handlerLoader, taskOverrides } from './tasks.js';
import { Waiters } from './waiters.js';

/**
 * A local Step Functions endpoint: an HTTP server speaking the Step Functions JSON protocol for the operations the
 * handlers and the benchmarks use (api.ts), backed by aws-local-stepfunctions running the real
 * statemachines/release.asl.json with the same DefinitionSubstitutions as CDK (fake Lambda ARNs, definition.ts). The
 * handlers talk to it through the real @aws-sdk/client-sfn, pointed here by AWS_ENDPOINT_URL_SFN; nothing in
 * functions/ knows it is local.
 *
 * What it adds to the library (docs/local-emulators.md says why each is needed):
 * - Task states whose resource is a worker function of lib/orchestration-manifest.ts call that handler in-process,
 *   and callback states get a fresh task token on every entry and a timer of their own (tasks.ts, waiters.ts).
 * - SendTaskSuccess / SendTaskFailure settle the matching wait; a token that is no longer waiting answers
 *   TaskTimedOut, like AWS.
 * - stop() cancels every pending wait, because the library's abort does not reach an in-flight task override.
 * - Execution names, history and status as the API reports them (executions.ts).
 */
export async function startStepFunctions(opts: StepFunctionsOptions = {}): Promise<LocalStepFunctions> {
  const region = opts.region ?? process.env.AWS_REGION ?? 'us-east-1';
  const account = opts.accountId ?? '000000000000';
  const name = opts.stateMachineName ?? 'ReleaseStateMachine';
  const sm: MachineIdentity = {
    region,
    account,
    name,
    arn: `arn:aws:states:${region}:${account}:stateMachine:${name}`,
  };
  const { definition, functionArns } = localDefinition({ ...opts, region, accountId: account });
  const machine = new StateMachine(definition);
  const load = opts.load ?? ((entry: string) => loadHandlerModule<{ handler: WorkerHandler }>(entry));
  const handlerFor = handlerLoader(functionArns, load);
  const waiters = new Waiters();
  const retryIntervalOverrides =
    opts.retryIntervalMs === undefined
      ? undefined
      : Object.fromEntries(Object.keys(definition.States).map((s) => [s, opts.retryIntervalMs as number]));
  const executions = new Executions(
    sm,
    machine,
    (execution, placeholder) => ({
      taskResourceLocalHandlers: taskOverrides(definition, execution, placeholder, {
        handlerFor,
        functionArns,
        waiters,
        waitMs: opts.waitMs,
      }),
      retryIntervalOverrides,
    }),
    waiters,
    opts.keepClosed ?? 2000,
  );

  const server = apiServer(operations(sm, definition, executions, waiters));
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => ok());
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://${opts.host ?? '127.0.0.1'}:${port}`;

  return {
    env: { AWS_ENDPOINT_URL_SFN: endpoint, RELEASE_STATE_MACHINE_ARN: sm.arn },
    endpoint,
    stateMachineArn: sm.arn,
    transitions(nameOrArn) {
      const arn = nameOrArn.startsWith('arn:') ? nameOrArn : executions.arnOf(nameOrArn);
      return executions.find(arn)?.stateEntered ?? 0;
    },
    async idle(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (executions.running().length) {
        if (Date.now() > deadline) return false;
        await Promise.race([
          Promise.all(executions.running().map((e) => e.done)),
          new Promise((r) => setTimeout(r, 50)),
        ]);
      }
      return true;
    },
    async stop() {
      const live = executions.running();
      for (const e of live) {
        e.abort();
        executions.close(e, 'ABORTED', {
          error: 'Local.Stopped',
          cause: 'local Step Functions endpoint stopped',
        });
      }
      for (const token of waiters.tokens()) waiters.settle(token)?.resolve({ aborted: true });
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
      await Promise.race([Promise.all(live.map((e) => e.done)), new Promise((r) => setTimeout(r, 2000))]);
    },
  };
}
