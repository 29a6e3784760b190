import type { IncomingMessage } from 'node:http';
import type { ErrorCode } from '#functions/shared/errors.js';

/**
 * What the stack still waits for before GET /health may answer 200 (the identity provider, the first study
 * sync, ...). Until then /health answers 503 with the JSON error body, naming what is missing.
 */
export class Readiness {
  private readonly pending = new Set<string>();

  waitFor(name: string): void {
    this.pending.add(name);
  }

  done(name: string): void {
    this.pending.delete(name);
  }

  get ready(): boolean {
    return this.pending.size === 0;
  }

  get waitingFor(): string[] {
    return [...this.pending];
  }

  /** For createLocalApi's `intercept`: answers /health while not ready, lets everything else through. */
  readonly intercept = (req: IncomingMessage): { status: number; body: unknown } | null => {
    if (this.ready) return null;
    const path = new URL(req.url ?? '/', 'http://local').pathname;
    if (path !== '/health' && path !== '/health/') return null;
    return {
      status: 503,
      body: {
        error: {
          code: 'not_ready' satisfies ErrorCode,
          message: `The local stack is starting; waiting for: ${this.waitingFor.join(', ')}`,
        },
      },
    };
  };
}
