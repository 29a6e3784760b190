import { describe, expect, it } from 'vitest';
import { releaseState, taskState } from '#functions/coordinator/import/mapping.js';

describe("the original's states here", () => {
  it('keeps the ended release states and refuses the active ones, waiting included, unless told what they become', () => {
    for (const s of ['published', 'canceled', 'failed'])
      expect(releaseState(s, undefined)).toEqual({ ok: true, state: s });
    for (const s of ['waiting', 'initializing', 'running', 'staged', 'publishing', 'canceling']) {
      expect(releaseState(s, undefined)).toMatchObject({
        ok: false,
        reason: expect.stringContaining(`(${s})`),
      });
      expect(releaseState(s, 'canceled')).toEqual({ ok: true, state: 'canceled', was: s });
    }
    expect(releaseState('complete', 'failed')).toEqual({
      ok: false,
      reason: 'unknown release state "complete"',
    });
  });

  it('renames waiting and initialized to pending and rejected to failed, keeps the rest, refuses other names', () => {
    expect(taskState('waiting')).toEqual({ ok: true, state: 'pending' });
    expect(taskState('initialized')).toEqual({ ok: true, state: 'pending' });
    expect(taskState('rejected')).toEqual({ ok: true, state: 'failed', was: 'rejected' });
    for (const s of ['pending', 'running', 'staged', 'publishing', 'published', 'canceled', 'failed'])
      expect(taskState(s)).toEqual({ ok: true, state: s });
    for (const s of ['cancelled', 'cancelling', 'complete', ''])
      expect(taskState(s)).toEqual({ ok: false, reason: `unknown task state "${s}"` });
  });

  it("ends a forced release's unfinished tasks in its state, and leaves those that had ended", () => {
    for (const s of ['waiting', 'initialized', 'pending', 'running', 'staged', 'publishing'])
      expect(taskState(s, 'canceled')).toEqual({ ok: true, state: 'canceled', was: s });
    for (const s of ['published', 'canceled', 'failed'])
      expect(taskState(s, 'canceled')).toEqual({ ok: true, state: s });
    expect(taskState('rejected', 'canceled')).toEqual({ ok: true, state: 'failed', was: 'rejected' });
  });
});
