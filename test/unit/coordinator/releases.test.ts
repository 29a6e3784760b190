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
      maintenance: { get: async () => null },
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
      maintenance: { get: async () => null },
    } as unknown as Parameters<typeof startRelease>[0];
    await startRelease(deps, input);
    expect(calls).toEqual(['publish 1', 'start']);
  });
});

describe('maintenance mode', () => {
  const input = { name: 'r', description: '', isMajor: false, author: 'a', tags: [], studies: ['SD_1'] };

  it('refuses a new release with a 503 and the Retry-After of the switch, before anything is read or written', async () => {
    const touched: string[] = [];
    const touch = (what: string) => async () => {
      touched.push(what);
      throw new Error(`${what} must not be called`);
    };
    const deps = {
      studies: { missing: touch('studies') },
      releases: { highestPublishedVersion: touch('versions'), create: touch('create') },
      taskServices: { enabledForNewRelease: touch('services') },
      orchestrator: { start: touch('start') },
      maintenance: {
        get: async () => ({
          on: true,
          since: '2026-01-01T00:00:00.000000Z',
          by: 'ops',
          reason: 'upgrade to 0.3.0',
          retryAfterSeconds: 120,
        }),
      },
    } as unknown as Parameters<typeof startRelease>[0];
    const err = await startRelease(deps, input).catch((e) => e);
    expect(err).toMatchObject({ status: 503, code: 'maintenance', headers: { 'Retry-After': '120' } });
    expect(err.message).toMatch(/maintenance mode \(upgrade to 0\.3\.0\)/);
    expect(touched).toEqual([]);
  });

  it('takes new releases while the switch is off', async () => {
    const deps = {
      studies: { missing: async () => ['SD_1'] },
      maintenance: {
        get: async () => ({ on: false, since: null, by: null, reason: '', retryAfterSeconds: 300 }),
      },
    } as unknown as Parameters<typeof startRelease>[0];
    // Past the switch: the unknown study is the next check.
    await expect(startRelease(deps, input)).rejects.toMatchObject({ status: 400 });
  });
});
