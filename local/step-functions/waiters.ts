import { type Execution, SfnError } from './model.js';

/** A callback state waiting for its task token. */
export interface Waiter {
  execution: Execution;
  resolve: (output: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

const TOKEN = /^[A-Za-z0-9_-]{40}$/;

/** The callback states waiting for SendTaskSuccess / SendTaskFailure, by task token. */
export class Waiters {
  private readonly byToken = new Map<string, Waiter>();

  add(token: string, waiter: Waiter): void {
    this.byToken.set(token, waiter);
    waiter.execution.tokens.add(token);
  }

  has(token: string): boolean {
    return this.byToken.has(token);
  }

  tokens(): string[] {
    return [...this.byToken.keys()];
  }

  /** Takes the waiter of `token` off the list and stops its timer; undefined when none waits. */
  settle(token: string): Waiter | undefined {
    const w = this.byToken.get(token);
    if (!w) return undefined;
    this.byToken.delete(token);
    w.execution.tokens.delete(token);
    clearTimeout(w.timer);
    return w;
  }

  /** As settle, for a token an API call names: a malformed one is InvalidToken, one not waiting TaskTimedOut. */
  take(token: string): Waiter {
    if (typeof token !== 'string' || !TOKEN.test(token)) throw new SfnError('InvalidToken', 'Invalid Token');
    const w = this.settle(token);
    // Well-formed but not waiting (answered, timed out, or from before a restart): what AWS answers for a stale token.
    if (!w) throw new SfnError('TaskTimedOut', "Task Timed Out: 'Provided task does not exist anymore'");
    return w;
  }
}
