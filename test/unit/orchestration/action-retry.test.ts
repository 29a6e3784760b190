import { describe, expect, it } from 'vitest';
import {
  FIRST_RETRY_DELAY_MS,
  MAX_RETRY_DELAY_MS,
  retryAfterMs,
  retryDelayMs,
  sendWithRetry,
} from '#functions/orchestration/action-retry.js';
import type { CallOutcome } from '#functions/orchestration/ports.js';
import { FakeClock } from '#functions/shared/clock.js';
import { STEPS_RELEASE as REL, reply, STEPS_CONFIG, stepsSetup } from './fakes.js';

const refused: CallOutcome = { ok: false, kind: 'unreachable', reason: 'unreachable (connection refused)' };
const busy = (retryAfter?: string): CallOutcome => ({
  ok: false,
  kind: 'status',
  status: 503,
  reason: 'answered status 503',
  ...(retryAfter === undefined ? {} : { retryAfter }),
});
const body = { action: 'get_status' as const, task_id: 'TA_1', release_id: 'RE_1', studies: [] };

/** Answers the scripted outcomes in order (the last one for ever); each call costs `callMs` of the fake clock. */
function scripted(clock: FakeClock, outcomes: CallOutcome[], callMs = 0) {
  const timeouts: number[] = [];
  let i = 0;
  return {
    timeouts,
    calls: {
      async action(_url: string, _body: unknown, timeoutMs: number) {
        timeouts.push(timeoutMs);
        clock.advance(callMs);
        return outcomes[Math.min(i++, outcomes.length - 1)];
      },
    },
  };
}

describe('Retry-After', () => {
  const now = Date.UTC(2026, 9, 21, 7, 28, 0);
  it('reads delta-seconds and HTTP dates, and nothing else', () => {
    expect(retryAfterMs('2', now)).toBe(2000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Wed, 21 Oct 2026 07:28:03 GMT', now)).toBe(3000);
    expect(retryAfterMs('Wed, 21 Oct 2026 07:27:00 GMT', now)).toBe(0); // already past
    expect(retryAfterMs(undefined, now)).toBeNull();
    expect(retryAfterMs('soon', now)).toBeNull();
    expect(retryAfterMs('-1', now)).toBeNull();
    expect(retryAfterMs('2026-10-21', now)).toBeNull();
  });
});

describe('which failures are retried', () => {
  it('a connection error, with a backoff that doubles up to its cap', () => {
    expect([1, 2, 3, 4, 5, 9].map((n) => retryDelayMs(refused, n, 0))).toEqual([
      FIRST_RETRY_DELAY_MS,
      FIRST_RETRY_DELAY_MS * 2,
      FIRST_RETRY_DELAY_MS * 4,
      MAX_RETRY_DELAY_MS,
      MAX_RETRY_DELAY_MS,
      MAX_RETRY_DELAY_MS,
    ]);
  });
  it('a 503 with Retry-After, after what it asks (never sooner than the backoff)', () => {
    expect(retryDelayMs(busy('3'), 1, 0)).toBe(3000);
    expect(retryDelayMs(busy('0'), 1, 0)).toBe(FIRST_RETRY_DELAY_MS);
  });
  it('nothing else: a 503 without Retry-After, other statuses, timeouts, bad bodies, URL refusals', () => {
    expect(retryDelayMs(busy(), 1, 0)).toBeNull();
    expect(retryDelayMs(busy('later'), 1, 0)).toBeNull();
    expect(retryDelayMs({ ...busy('1'), status: 500 } as CallOutcome, 1, 0)).toBeNull();
    for (const kind of ['timeout', 'not_json', 'bad_body', 'refused'] as const)
      expect(retryDelayMs({ ok: false, kind, reason: kind }, 1, 0)).toBeNull();
  });
});

describe('sendWithRetry', () => {
  const sleepOn = (clock: FakeClock) => async (ms: number) => clock.advance(ms);

  it('retries a refused connection until the service answers, each attempt getting the time left', async () => {
    const clock = new FakeClock();
    const s = scripted(clock, [refused, refused, reply('running')], 10);
    const out = await sendWithRetry(s.calls, 'http://svc', body, 5000, clock, sleepOn(clock));
    expect(out).toMatchObject({ ok: true, attempts: 3 });
    // 5000; then 5000 - 10 - 250; then 5000 - 10 - 250 - 10 - 500
    expect(s.timeouts).toEqual([5000, 4740, 4230]);
  });

  it('waits what a 503 asks for in Retry-After, then succeeds', async () => {
    const clock = new FakeClock();
    const s = scripted(clock, [busy('2'), reply('running')]);
    const t0 = clock.nowMs();
    expect(await sendWithRetry(s.calls, 'http://svc', body, 5000, clock, sleepOn(clock))).toMatchObject({
      ok: true,
      attempts: 2,
    });
    expect(clock.nowMs() - t0).toBe(2000);
  });

  it('gives up when the timeout is spent, and says how many attempts it made', async () => {
    const clock = new FakeClock();
    const s = scripted(clock, [refused], 100);
    const out = await sendWithRetry(s.calls, 'http://svc', body, 3000, clock, sleepOn(clock));
    expect(out.ok).toBe(false);
    expect(out.attempts).toBeGreaterThan(2);
    if (!out.ok)
      expect(out.reason).toMatch(/^unreachable \(connection refused\) \(\d+ attempts in [\d.]+ s\)$/);
    // Never past the action timeout: the waits and the attempts fit in it.
    expect(clock.nowMs() - Date.UTC(2026, 0, 1)).toBeLessThanOrEqual(3000);
  });

  it('fails at once when Retry-After asks for more time than is left', async () => {
    const clock = new FakeClock();
    const s = scripted(clock, [busy('30')]);
    const out = await sendWithRetry(s.calls, 'http://svc', body, 5000, clock, sleepOn(clock));
    expect(out).toMatchObject({
      ok: false,
      attempts: 1,
      reason: 'answered status 503 with Retry-After 30 s, later than the action timeout allows',
    });
  });

  it('does not retry a 503 without Retry-After: the spec\u2019s "action rejected"', async () => {
    const clock = new FakeClock();
    const s = scripted(clock, [busy(), reply('running')]);
    expect(await sendWithRetry(s.calls, 'http://svc', body, 5000, clock, sleepOn(clock))).toMatchObject({
      ok: false,
      attempts: 1,
      reason: 'answered status 503',
    });
  });
});

describe('the release steps retry within the action timeout', () => {
  it('a get_status that meets a refused connection, then an answer, does not fail the task', async () => {
    let n = 0;
    const { releases, calls, run } = stepsSetup(
      () => (n++ < 2 ? refused : reply('staged')),
      1,
      { state: 'running' },
      [{ state: 'running' }],
      { ...STEPS_CONFIG, actionTimeoutSeconds: 5 },
    );
    expect(await run('poll')).toMatchObject({ next: 'waitPublish', state: 'staged' });
    expect(calls.calls).toHaveLength(3);
    expect(releases.tasks(REL)).toEqual(['staged']);
  });

  it('every attempt is signed for the task\u2019s service: a retry is a fresh request, with its own timestamp', async () => {
    let n = 0;
    const { deps, calls, run } = stepsSetup(
      () => (n++ < 2 ? refused : reply('staged')),
      1,
      { state: 'running' },
      [{ state: 'running' }],
      { ...STEPS_CONFIG, actionTimeoutSeconds: 5 },
    );
    deps.credentials.set('TS_00000000', {
      signingSecret: 'whsec_a',
      previousSigningSecret: null,
      previousUntil: null,
      createdClientId: null,
      rotatedAt: null,
    });
    await run('poll');
    expect(calls.signed).toEqual(Array(3).fill({ url: 'http://svc0', secrets: ['whsec_a'] }));
  });

  it('a 503 with Retry-After to publish is retried; a 503 without it fails the task', async () => {
    const answers = [busy('0'), reply('publishing')];
    const retried = stepsSetup(() => answers.shift() ?? reply('publishing'), 1, { state: 'publishing' }, [
      { state: 'staged' },
    ]);
    expect(await retried.run('publish')).toMatchObject({ next: 'wait', state: 'publishing' });
    expect(retried.releases.tasks(REL)).toEqual(['publishing']);

    const rejected = stepsSetup(() => busy(), 1, { state: 'publishing' }, [{ state: 'staged' }]);
    expect(await rejected.run('publish')).toMatchObject({ next: 'cancel' });
    expect(rejected.calls.calls).toHaveLength(1);
    expect(rejected.deps.published.find((e) => e.eventType === 'error')?.message).toBe(
      'task TA_00000000 changed from staged to failed: publish to task service "svc0" (TS_00000000) failed: answered status 503',
    );
  });

  it('a service that stays unreachable fails its task once the action timeout is spent, saying so', async () => {
    const { deps, calls, run } = stepsSetup(() => refused, 1, { state: 'running' }, [{ state: 'running' }]);
    expect(await run('poll')).toMatchObject({ next: 'cancel' });
    expect(calls.calls.length).toBeGreaterThan(1);
    expect(deps.published.find((e) => e.eventType === 'error')?.message).toMatch(
      /get_status to task service "svc0" \(TS_00000000\) failed: unreachable \(connection refused\) \(\d attempts in 0\.\d+ s\)$/,
    );
  });
});
