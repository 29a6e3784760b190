import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAX_TASKS_PER_RELEASE } from '#functions/coordinator/model.js';
import {
  actionWaves,
  LAMBDA_MAX_TIMEOUT_SECONDS,
  MIN_TASK_LIMIT,
  orchestrationSettings,
  RELEASE_STEP_STATE_TIMEOUT_SECONDS,
  releaseStepTimeoutSeconds,
  roundSettingsProblem,
  runConfigFrom,
  STEP_OVERHEAD_SECONDS,
  TOKEN_FETCH_SECONDS,
  taskLimit,
  worstRoundSeconds,
} from '#functions/orchestration/config.js';

describe('orchestration settings', () => {
  it('default to a 5 s poll, a 15 s action timeout and 3 health failures', () => {
    const s = orchestrationSettings({});
    expect(s).toMatchObject({ POLL_SECONDS: 5, ACTION_TIMEOUT_SECONDS: 15, HEALTH_FAILURES: 3 });
  });

  it('round a fractional poll interval up to the whole seconds a Step Functions timeout takes', () => {
    const s = orchestrationSettings({
      POLL_SECONDS: '0.5',
      STAGED_WAIT_SECONDS: '2.2',
      ACTION_TIMEOUT_SECONDS: '0.3',
    });
    expect(runConfigFrom(s)).toMatchObject({
      pollSeconds: 1,
      stagedWaitSeconds: 3,
      actionTimeoutSeconds: 0.3,
    });
  });

  it('refuse a setting that is not a positive number, naming it', () => {
    expect(() => orchestrationSettings({ POLL_SECONDS: 'soon' })).toThrow(/POLL_SECONDS/);
    expect(() => orchestrationSettings({ HEALTH_FAILURES: '0' })).toThrow(/HEALTH_FAILURES/);
  });
});

describe('the release step timeout covers the worst round the settings allow', () => {
  it('allows releases of up to 1,000 tasks, or as many as one round can call within a Lambda invocation', () => {
    expect(MAX_TASKS_PER_RELEASE).toBe(1000);
    // The defaults: 33 waves of 64 fit in 840 s; the cap is the smaller.
    expect(taskLimit({ actionTimeoutSeconds: 15, concurrency: 64 })).toBe(1000);
    // The largest action timeout: 3 waves of 250 s fit.
    expect(taskLimit({ actionTimeoutSeconds: 240, concurrency: 64 })).toBe(192);
    expect(taskLimit({ actionTimeoutSeconds: 240, concurrency: 30 })).toBe(MIN_TASK_LIMIT);
    expect(taskLimit({ actionTimeoutSeconds: 15, concurrency: 1 })).toBe(33);
  });

  it('counts waves of ACTION_CONCURRENCY actions over the largest release, each at the action timeout plus a token', () => {
    expect(actionWaves({ actionTimeoutSeconds: 15, concurrency: 64 })).toBe(16);
    expect(actionWaves({ actionTimeoutSeconds: 15, concurrency: 500 })).toBe(2);
    expect(actionWaves({ actionTimeoutSeconds: 15, concurrency: 1 })).toBe(33);
    expect(actionWaves({ actionTimeoutSeconds: 240, concurrency: 64 })).toBe(3);
    expect(actionWaves({ actionTimeoutSeconds: 15, concurrency: 7, tasks: 3 })).toBe(1);
    // The defaults: 16 waves x (15 + 10) + 60.
    expect(worstRoundSeconds({ actionTimeoutSeconds: 15, concurrency: 64 })).toBe(400);
    expect(releaseStepTimeoutSeconds({ actionTimeoutSeconds: 15, concurrency: 64 })).toBe(
      16 * (15 + TOKEN_FETCH_SECONDS) + STEP_OVERHEAD_SECONDS,
    );
    // The largest action timeout: 3 waves of 240 + 10, + 60.
    expect(releaseStepTimeoutSeconds({ actionTimeoutSeconds: 240, concurrency: 90 })).toBe(810);
    expect(releaseStepTimeoutSeconds({ actionTimeoutSeconds: 0.3, concurrency: 64 })).toBe(225);
  });

  it('at every setting the env accepts, the step fits in a Lambda and under the ASL state timeout', () => {
    let accepted = 0;
    for (let concurrency = 1; concurrency <= 500; concurrency++)
      for (const timeout of [1, 5, 15, 30, 60, 120, 240]) {
        const env = { ACTION_TIMEOUT_SECONDS: String(timeout), ACTION_CONCURRENCY: String(concurrency) };
        const limit = taskLimit({ actionTimeoutSeconds: timeout, concurrency });
        if (limit >= MIN_TASK_LIMIT) {
          accepted++;
          expect(orchestrationSettings(env).ACTION_CONCURRENCY).toBe(concurrency);
          // The worst round: every wave of the largest release allowed at its action timeout, with a token fetch
          // each, within one invocation.
          const needed = releaseStepTimeoutSeconds({ actionTimeoutSeconds: timeout, concurrency });
          const waves = Math.ceil(limit / concurrency);
          expect(needed).toBeGreaterThanOrEqual(waves * timeout + STEP_OVERHEAD_SECONDS);
          expect(needed).toBeLessThanOrEqual(LAMBDA_MAX_TIMEOUT_SECONDS);
          expect(needed).toBeLessThan(RELEASE_STEP_STATE_TIMEOUT_SECONDS);
        } else {
          expect(() => orchestrationSettings(env)).toThrow(
            /ACTION_TIMEOUT_SECONDS.*more than Lambda's 900 s/,
          );
        }
      }
    expect(accepted).toBeGreaterThan(1000);
  });

  it('refuses settings whose worst round would outlast a Lambda, saying which to change', () => {
    // The maximum action timeout with the default concurrency: 2 waves of 250 s + 60 s fit...
    expect(orchestrationSettings({ ACTION_TIMEOUT_SECONDS: '240' }).ACTION_TIMEOUT_SECONDS).toBe(240);
    // ...one call at a time over 90 tasks does not.
    expect(() => orchestrationSettings({ ACTION_TIMEOUT_SECONDS: '240', ACTION_CONCURRENCY: '1' })).toThrow(
      'a release step could take 22560 s (90 wave(s) of 1 action(s) for 90 tasks, each up to 240 s plus 10 s for a token, plus 60 s)',
    );
    expect(roundSettingsProblem({ actionTimeoutSeconds: 15, concurrency: 64 })).toBeNull();
  });

  it('the state machine gives every ReleaseStep state that long', () => {
    const asl = JSON.parse(readFileSync('statemachines/release.asl.json', 'utf8'));
    const steps = Object.entries(asl.States as Record<string, any>).filter(
      ([, s]) => s.Type === 'Task' && String(s.Resource).includes('ReleaseStepFunctionArn'),
    );
    expect(steps.map(([name]) => name).sort()).toEqual(
      ['Abort', 'Cancel', 'ContinueAsNew', 'Initialize', 'Poll', 'Publish', 'Route', 'Start'].sort(),
    );
    for (const [, s] of steps) expect(s.TimeoutSeconds).toBe(RELEASE_STEP_STATE_TIMEOUT_SECONDS);
  });
});
