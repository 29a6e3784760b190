import { describe, expect, it } from 'vitest';
import { MAX_TASKS_PER_RELEASE, startRelease } from '#functions/coordinator/releases.js';

describe('startRelease', () => {
  const refused = async (enabled: number, maxTasks?: number) => {
    const services = Array.from({ length: enabled }, (_, i) => ({ id: `TS_${i}`, name: `s${i}` }));
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
      maxTasks,
    } as unknown as Parameters<typeof startRelease>[0];
    return startRelease(deps, {
      name: 'r',
      description: '',
      isMajor: false,
      author: 'a',
      tags: [],
      studies: ['SD_1'],
    });
  };

  it(`refuses more than ${MAX_TASKS_PER_RELEASE} enabled services, the most a release takes`, async () => {
    await expect(refused(MAX_TASKS_PER_RELEASE + 1)).rejects.toMatchObject({ status: 409 });
  });

  it('refuses more enabled services than the orchestration settings allow, saying how many they allow', async () => {
    await expect(refused(193, 192)).rejects.toMatchObject({
      status: 409,
      message: expect.stringContaining('at most 192'),
    });
  });

  it('creates a release of as many tasks as the limit allows, however many transactions that takes', async () => {
    // The repository is called (and here refuses): the limit let it through.
    await expect(refused(MAX_TASKS_PER_RELEASE)).rejects.toThrow('must not be called');
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
