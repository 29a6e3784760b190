import { describe, expect, it } from 'vitest';
import { MAX_TASKS_PER_RELEASE, startRelease } from '#functions/coordinator/releases.js';

describe('startRelease', () => {
  it(`refuses more than ${MAX_TASKS_PER_RELEASE} enabled services (one transaction holds 100 items)`, async () => {
    const services = Array.from({ length: MAX_TASKS_PER_RELEASE + 1 }, (_, i) => ({
      id: `TS_${i}`,
      name: `s${i}`,
    }));
    const deps = {
      studies: { missing: async () => [] },
      releases: {
        highestPublishedVersion: async () => null,
        create: async () => {
          throw new Error('must not be called');
        },
      },
      taskServices: {
        enabledForNewRelease: async () => ({ services, guard: { servicesRev: 0, releaseSeq: 0 } }),
      },
      orchestrator: { start: async () => {} },
    } as unknown as Parameters<typeof startRelease>[0];
    await expect(
      startRelease(deps, {
        name: 'r',
        description: '',
        isMajor: false,
        author: 'a',
        tags: [],
        studies: ['SD_1'],
      }),
    ).rejects.toMatchObject({ status: 409 });
  });
});

describe('event fan-out', () => {
  const input = { name: 'r', description: '', isMajor: false, author: 'a', tags: [], studies: ['SD_1'] };

  it('publishes the creation event of a new release after the transaction, then starts the orchestrator', async () => {
    const calls: string[] = [];
    const created = { id: 'EV_1', eventType: 'info', message: 'created' };
    const deps = {
      studies: { missing: async () => [] },
      releases: {
        highestPublishedVersion: async () => null,
        create: async () => ({
          release: { id: 'RE_1' },
          tasks: [],
          notes: [],
          extras: {},
          events: [created],
        }),
      },
      taskServices: { enabledForNewRelease: async () => ({ services: [], guard: { servicesRev: 0 } }) },
      orchestrator: { start: async () => void calls.push('start') },
      publisher: { publish: async (events: unknown[]) => void calls.push(`publish ${events.length}`) },
    } as unknown as Parameters<typeof startRelease>[0];
    await startRelease(deps, input);
    expect(calls).toEqual(['publish 1', 'start']);
  });
});
