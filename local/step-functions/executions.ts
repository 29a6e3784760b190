import { randomUUID } from 'node:crypto';
import { ExecutionAbortedError, ExecutionTimeoutError, type StateMachine } from 'aws-local-stepfunctions';
import { type Execution, type MachineIdentity, SfnError, type Status } from './model.js';
import type { Waiters } from './waiters.js';

const NAME = /^[A-Za-z0-9_-]{1,80}$/;

/** The overrides the library runs one execution with (tasks.ts), given its fixed task-token placeholder. */
export type OverridesFor = (
  execution: Execution,
  placeholder: string,
) => {
  taskResourceLocalHandlers: Record<string, (input: any) => Promise<any>>;
  retryIntervalOverrides?: Record<string, number>;
};

/**
 * The executions of one state machine, run by aws-local-stepfunctions, with the history and status the Step
 * Functions API reports. Closed executions are kept up to `keepClosed` (the oldest dropped first).
 */
export class Executions {
  private readonly byArn = new Map<string, Execution>();
  private readonly closed: string[] = [];

  constructor(
    private readonly sm: MachineIdentity,
    private readonly machine: StateMachine,
    private readonly overridesFor: OverridesFor,
    private readonly waiters: Waiters,
    private readonly keepClosed: number,
  ) {}

  arnOf(name: string): string {
    return `arn:aws:states:${this.sm.region}:${this.sm.account}:execution:${this.sm.name}:${name}`;
  }

  find(arn: string): Execution | undefined {
    return this.byArn.get(arn);
  }

  get(arn: string): Execution {
    const e = this.byArn.get(arn);
    if (!e) throw new SfnError('ExecutionDoesNotExist', `Execution Does Not Exist: '${arn}'`);
    return e;
  }

  all(): Execution[] {
    return [...this.byArn.values()];
  }

  running(): Execution[] {
    return this.all().filter((e) => e.status === 'RUNNING');
  }

  private record(execution: Execution, type: string, details: Record<string, unknown> = {}) {
    const id = execution.history.length + 1;
    execution.history.push({ id, previousEventId: id - 1, timestamp: Date.now() / 1000, type, ...details });
  }

  close(execution: Execution, status: Status, extra: Partial<Execution> = {}): void {
    if (execution.status !== 'RUNNING') return;
    Object.assign(execution, extra, { status, stopDate: Date.now() / 1000 });
    // Resolve (not reject) the abandoned waits: the library's loop then sees the abort and stops quietly, where a
    // rejection would surface as an unhandled ExecutionError after the run already settled.
    for (const token of [...execution.tokens]) this.waiters.settle(token)?.resolve({ aborted: true });
    this.closed.push(execution.arn);
    while (this.closed.length > this.keepClosed) this.byArn.delete(this.closed.shift() as string);
  }

  /**
   * StartExecution: idempotent for a name whose execution is RUNNING with the same input, and otherwise refusing a
   * used name with ExecutionAlreadyExists, as on AWS (Standard workflows).
   */
  start(body: any): { executionArn: string; startDate: number } {
    const { sm } = this;
    if (body.stateMachineArn !== sm.arn)
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
    const arn = this.arnOf(name);
    const existing = this.byArn.get(arn);
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
    this.byArn.set(arn, execution);
    const run = this.machine.run(parsed as any, {
      overrides: this.overridesFor(execution, placeholder),
      context: {
        Execution: { Id: arn, Name: name, RoleArn: `arn:aws:iam::${sm.account}:role/local` },
        StateMachine: { Id: sm.arn, Name: sm.name },
        Task: { Token: placeholder },
      },
    });
    execution.abort = run.abort;
    const drained = this.drain(execution, run.eventLogs as AsyncGenerator<any>);
    const settled = run.result.then(
      (output) => this.close(execution, 'SUCCEEDED', { output: JSON.stringify(output ?? null) }),
      (err: any) => {
        if (err instanceof ExecutionAbortedError) this.close(execution, 'ABORTED');
        else if (err instanceof ExecutionTimeoutError) this.close(execution, 'TIMED_OUT');
        else {
          const cause = err?.cause;
          this.close(execution, 'FAILED', {
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
  }

  /** The library's event log, as the history events Step Functions records. */
  private async drain(execution: Execution, events: AsyncGenerator<any>): Promise<void> {
    const roleArn = `arn:aws:iam::${this.sm.account}:role/local`;
    for await (const e of events) {
      switch (e.type) {
        case 'ExecutionStarted':
          this.record(execution, 'ExecutionStarted', {
            executionStartedEventDetails: { input: execution.input, roleArn },
          });
          break;
        case 'StateEntered':
          execution.stateEntered++;
          this.record(execution, `${e.state.type}StateEntered`, {
            stateEnteredEventDetails: { name: e.state.name, input: JSON.stringify(e.state.input) },
          });
          break;
        case 'StateExited':
          this.record(execution, `${e.state.type}StateExited`, {
            stateExitedEventDetails: { name: e.state.name, output: JSON.stringify(e.state.output ?? null) },
          });
          break;
        case 'StateFailed':
          this.record(execution, 'TaskFailed', {
            taskFailedEventDetails: { error: e.Error, cause: String(e.Cause) },
          });
          break;
        case 'ExecutionSucceeded':
          this.record(execution, 'ExecutionSucceeded', {
            executionSucceededEventDetails: { output: JSON.stringify(e.output ?? null) },
          });
          break;
        case 'ExecutionFailed':
          this.record(execution, 'ExecutionFailed', {
            executionFailedEventDetails: { error: e.Error, cause: String(e.Cause) },
          });
          break;
        case 'ExecutionAborted':
          this.record(execution, 'ExecutionAborted', {});
          break;
        case 'ExecutionTimeout':
          this.record(execution, 'ExecutionTimedOut', {});
          break;
        default:
          break; // StateRetried / StateCaught have no history event of their own on AWS
      }
    }
  }
}
