import { describe, expect, it, vi } from 'vitest';
import type { Execution } from '#local/step-functions/model.js';
import { Waiters } from '#local/step-functions/waiters.js';

const execution = () => ({ tokens: new Set<string>() }) as unknown as Execution;
const TOKEN = 'a'.repeat(40);

describe('the callback waits of the local Step Functions endpoint', () => {
  it('settles a wait once, by its token, and stops its timer', () => {
    vi.useFakeTimers();
    try {
      const waiters = new Waiters();
      const e = execution();
      const timedOut = vi.fn();
      const resolve = vi.fn();
      waiters.add(TOKEN, { execution: e, resolve, reject: vi.fn(), timer: setTimeout(timedOut, 1000) });
      expect(e.tokens.has(TOKEN)).toBe(true);
      waiters.take(TOKEN).resolve('done');
      expect(resolve).toHaveBeenCalledWith('done');
      expect(e.tokens.has(TOKEN)).toBe(false);
      vi.advanceTimersByTime(2000);
      expect(timedOut).not.toHaveBeenCalled();
      expect(waiters.settle(TOKEN)).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
  });

  it('answers InvalidToken for a malformed token and TaskTimedOut for one that no longer waits, as AWS does', () => {
    const waiters = new Waiters();
    expect(() => waiters.take('short')).toThrow(expect.objectContaining({ type: 'InvalidToken' }));
    expect(() => waiters.take(TOKEN)).toThrow(expect.objectContaining({ type: 'TaskTimedOut' }));
  });
});
