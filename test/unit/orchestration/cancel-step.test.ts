/** @covers functions/orchestration/cancel-step.ts */
import { describe, expect, it } from 'vitest';
import { STEPS_RELEASE as REL, reply, stepsSetup } from './fakes.js';

/**
 * The cancel step of a release some of whose tasks already published (a cancel confirmed during publishing, a
 * failure or a timeout while publishing): published tasks are told to discard, stay `published`, and the events
 * name each of them.
 */
describe('canceling a partly published release', () => {
  const publishingTasks = [{ state: 'published' }, { state: 'publishing' }, { state: 'published' }];

  it('sends cancel (discard) to the tasks that published, keeps them published, and names each in the events', async () => {
    const { releases, calls, deps, run } = stepsSetup(
      (url) => (url.endsWith('2') ? { ok: false, kind: 'timeout', reason: 'timed out' } : reply('canceled')),
      3,
      { state: 'canceling' },
      publishingTasks,
    );
    expect(await run('cancel')).toMatchObject({ next: 'done', state: 'canceled' });
    expect(calls.calls.map((c) => [c.action, c.taskId])).toEqual([
      ['cancel', 'TA_00000000'],
      ['cancel', 'TA_00000001'],
      ['cancel', 'TA_00000002'],
    ]);
    // `published` is final: the record keeps what happened; only the task still at work is canceled.
    expect(releases.tasks(REL)).toEqual(['published', 'canceled', 'published']);
    const byTask = (id: string) => deps.published.filter((e) => e.taskId === id).map((e) => e.message);
    expect(byTask('TA_00000000')).toEqual([
      'task TA_00000000 had already published; cancel was sent to task service "svc0" (TS_00000000) to discard ' +
        'its publication, and it answered canceled; the task stays published',
    ]);
    const undelivered = deps.published.find((e) => e.taskId === 'TA_00000002');
    expect(undelivered).toMatchObject({ eventType: 'error', taskServiceId: 'TS_00000002' });
    expect(undelivered?.message).toBe(
      'task TA_00000002 had already published; cancel to task service "svc2" (TS_00000002) failed: no reply ' +
        'within 0.5 s, so its publication may remain; the task stays published',
    );
    expect(byTask('TA_00000001')).toEqual(['task TA_00000001 changed from publishing to canceled']);
    const summary = deps.published.find((e) => e.taskId === null && e.eventType === 'warning');
    expect(summary?.message).toBe(
      `release ${REL} ends canceled after 2 of 3 task(s) had published: TA_00000000 (task service "svc0" ` +
        '(TS_00000000)), TA_00000002 (task service "svc2" (TS_00000002)); cancel was sent to each to discard its ' +
        'publication',
    );
    // Never published as a whole: the provisional version stays, and no version or study stamp is claimed.
    const after = await releases.load(REL);
    expect(after?.release.version).toBe('0.0.1');
    expect(releases.versions.size).toBe(0);
    expect(releases.studies.size).toBe(0);
  });

  it('a failure while publishing ends the release failed: the culprit failed, published tasks published', async () => {
    const { releases, run } = stepsSetup(() => reply('canceled'), 3, { state: 'canceling' }, [
      { state: 'published' },
      { state: 'failed' },
      { state: 'publishing' },
    ]);
    expect(await run('cancel')).toMatchObject({ state: 'failed' });
    expect(releases.tasks(REL)).toEqual(['published', 'failed', 'canceled']);
  });

  it('a failed task that answers cancel with `failed` has been told; nothing is reported about it', async () => {
    const { deps, run } = stepsSetup(() => reply('failed'), 1, { state: 'canceling' }, [{ state: 'failed' }]);
    expect(await run('cancel')).toMatchObject({ state: 'failed' });
    expect(deps.published.filter((e) => e.eventType === 'warning')).toEqual([]);
  });
});
