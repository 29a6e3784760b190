import { describe, expect, it } from 'vitest';
import { PUBLISH_REQUESTED_AT } from '#functions/coordinator/model.js';
import { DEFAULT_MAX_PHASE_SECONDS, orchestrationSettings } from '#functions/orchestration/config.js';
import { STEPS_RELEASE as REL, reply, STEPS_CONFIG, stepsSetup } from './fakes.js';

/** The fakes' clock reads 2026-06-01T00:00:00Z; a release created an hour before is 3600 s into its phase. */
const NOW = Date.UTC(2026, 5, 1);
const hourAgo = new Date(NOW - 3600_000).toISOString().replace('Z', '000Z');
const limited = { ...STEPS_CONFIG, maxPhaseSeconds: 1800 };

describe('MAX_PHASE_SECONDS', () => {
  it('defaults to 48 hours, and is a setting', () => {
    expect(DEFAULT_MAX_PHASE_SECONDS).toBe(172_800);
    expect(orchestrationSettings({}).MAX_PHASE_SECONDS).toBe(172_800);
    expect(orchestrationSettings({ MAX_PHASE_SECONDS: '60' }).MAX_PHASE_SECONDS).toBe(60);
    expect(() => orchestrationSettings({ MAX_PHASE_SECONDS: '0' })).toThrow(/MAX_PHASE_SECONDS/);
  });

  it('fails the tasks still running once staging has lasted longer, naming each, and the release with them', async () => {
    const { releases, calls, deps, run } = stepsSetup(
      () => reply('running'),
      3,
      { state: 'running', createdAt: hourAgo },
      [{ state: 'running' }, { state: 'staged' }, { state: 'pending' }],
      limited,
    );
    expect(await run('poll')).toMatchObject({ next: 'cancel', state: 'canceling' });
    expect(calls.calls).toEqual([]); // nothing asked: the phase is over
    expect(releases.tasks(REL)).toEqual(['failed', 'staged', 'failed']);
    const errors = deps.published.filter((e) => e.eventType === 'error').map((e) => e.message);
    expect(errors).toContain(
      'task TA_00000000 changed from running to failed: task service "svc0" (TS_00000000) had not finished: the ' +
        'task was still running when the staging phase passed its limit of 1800 s (MAX_PHASE_SECONDS; it began ' +
        'at 2026-05-31T23:00:00.000000Z)',
    );
    expect(errors).toContain(
      `release ${REL}: the staging phase passed MAX_PHASE_SECONDS (1800 s) with 2 task(s) still at work: ` +
        'TA_00000000 (task service "svc0" (TS_00000000), running), TA_00000002 (task service "svc2" (TS_00000002), pending)',
    );
    // The cancel that follows ends the release failed; the staged task is canceled, the overdue ones stay failed.
    expect(await run('cancel')).toMatchObject({ state: 'failed' });
    expect(releases.tasks(REL)).toEqual(['failed', 'canceled', 'failed']);
  });

  it('times publishing from the publish request, not from the release creation', async () => {
    const requested = NOW - 600_000; // ten minutes ago: in time
    const inTime = stepsSetup(
      () => reply('publishing'),
      1,
      { state: 'publishing', createdAt: hourAgo },
      [{ state: 'publishing' }],
      limited,
    );
    await inTime.releases.exchangeExtras(REL, { set: { [PUBLISH_REQUESTED_AT]: requested } });
    expect(await inTime.run('poll')).toMatchObject({ next: 'wait', state: 'publishing' });

    const late = stepsSetup(
      () => reply('publishing'),
      2,
      { state: 'publishing', createdAt: hourAgo },
      [{ state: 'publishing' }, { state: 'published' }],
      limited,
    );
    await late.releases.exchangeExtras(REL, { set: { [PUBLISH_REQUESTED_AT]: NOW - 2000_000 } });
    expect(await late.run('poll')).toMatchObject({ next: 'cancel' });
    expect(late.releases.tasks(REL)).toEqual(['failed', 'published']);
    expect(late.deps.published.find((e) => e.taskId === 'TA_00000000')?.message).toContain(
      'was still publishing when the publishing phase passed its limit of 1800 s',
    );
  });

  it('leaves a staged release alone however long it waits for publish', async () => {
    const { run, deps } = stepsSetup(
      () => reply('staged'),
      1,
      { state: 'staged', createdAt: hourAgo },
      [{ state: 'staged' }],
      limited,
    );
    expect(await run('route')).toMatchObject({ next: 'waitPublish', state: 'staged' });
    expect(deps.published).toEqual([]);
  });
});
