import { describe, expect, it } from 'vitest';
import { watchPhases } from '#functions/orchestration/phase-watch.js';

/** PhaseWatch's decision: which completed groups make a release's whole phase complete, and what a failure does. */
function setup(complete: Record<string, boolean>, failOn: string[] = []) {
  const reads: string[] = [];
  const woken: string[] = [];
  const deps = {
    releases: {
      allTasksIn: async (releaseId: string, state: string) => {
        reads.push(`${releaseId} ${state}`);
        if (failOn.includes(releaseId))
          throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
        return complete[`${releaseId} ${state}`] ?? false;
      },
    },
    orchestrator: { wake: async (id: string) => void woken.push(id) },
  };
  return { deps, reads, woken };
}

describe('watchPhases', () => {
  it('wakes a release only when every task is there, reading each release and state once per batch', async () => {
    const { deps, reads, woken } = setup({ 'RE_1 staged': true, 'RE_2 staged': false });
    const out = await watchPhases(deps, [
      { releaseId: 'RE_1', state: 'staged' },
      { releaseId: 'RE_2', state: 'staged' },
      { releaseId: 'RE_1', state: 'staged' },
    ]);
    expect(out.woken).toEqual(['RE_1']);
    expect(woken).toEqual(['RE_1']);
    expect(reads.sort()).toEqual(['RE_1 staged', 'RE_2 staged']);
  });

  it('reads nothing and wakes nobody for a batch without completed groups', async () => {
    const { deps, reads, woken } = setup({});
    expect(await watchPhases(deps, [])).toEqual({ woken: [] });
    expect(reads).toEqual([]);
    expect(woken).toEqual([]);
  });

  it('checks the published phase apart from the staged one', async () => {
    const { deps, woken } = setup({ 'RE_1 published': true });
    await watchPhases(deps, [
      { releaseId: 'RE_1', state: 'staged' },
      { releaseId: 'RE_1', state: 'published' },
    ]);
    expect(woken).toEqual(['RE_1']);
  });

  it('still wakes the others when one check fails, then fails the batch so that it is tried again', async () => {
    const { deps, woken } = setup({ 'RE_1 staged': true, 'RE_2 staged': true }, ['RE_2']);
    await expect(
      watchPhases(deps, [
        { releaseId: 'RE_1', state: 'staged' },
        { releaseId: 'RE_2', state: 'staged' },
      ]),
    ).rejects.toThrow('1 of 2 phase checks failed');
    expect(woken).toEqual(['RE_1']);
  });
});
