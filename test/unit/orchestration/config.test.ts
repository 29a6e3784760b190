import { describe, expect, it } from 'vitest';
import { orchestrationSettings, runConfigFrom } from '../../../functions/orchestration/config.js';

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
