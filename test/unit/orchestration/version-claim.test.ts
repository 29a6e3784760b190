import { describe, expect, it } from 'vitest';
import type { ReleaseAggregate } from '#functions/coordinator/model.js';
import { CLAIMED_VERSION, claimedVersion } from '#functions/orchestration/version-claim.js';
import { MemoryReleases } from './fakes.js';

const noPause = async () => {};

async function publishing(releases: MemoryReleases, id: string, isMajor = false): Promise<ReleaseAggregate> {
  releases.add({ id, state: 'publishing', isMajor });
  return (await releases.load(id)) as ReleaseAggregate;
}

describe('claimedVersion', () => {
  it('claims the next minor after the highest published, and records the claim on the release', async () => {
    const releases = new MemoryReleases();
    releases.versions.set('0.3.0', 'RE_OLD00000');
    const agg = await publishing(releases, 'RE_00000001');
    expect(await claimedVersion({ releases, pause: noPause }, agg)).toBe('0.4.0');
    expect(releases.versions.get('0.4.0')).toBe('RE_00000001');
    expect((await releases.load('RE_00000001'))?.extras[CLAIMED_VERSION]).toBe('0.4.0');
    // A step run again after the claim (a crash before the publish) publishes under the same version.
    const again = (await releases.load('RE_00000001')) as ReleaseAggregate;
    const writes = releases.changes.length;
    expect(await claimedVersion({ releases, pause: noPause }, again)).toBe('0.4.0');
    expect(releases.changes.length).toBe(writes);
  });

  it('claims again from the new highest when another publish took the version, pausing between tries', async () => {
    const releases = new MemoryReleases();
    const agg = await publishing(releases, 'RE_00000002', true);
    const taken = ['1.0.0', '2.0.0'];
    releases.beforeChange = (change) => {
      // Two rivals each claim the version this one is about to, just before it does.
      const next = taken.shift();
      if (next && change.claimVersion) releases.versions.set(next, 'RE_RIVAL000');
    };
    const pauses: number[] = [];
    const version = await claimedVersion({ releases, pause: async (n) => void pauses.push(n) }, agg);
    expect(version).toBe('3.0.0');
    expect(pauses).toEqual([1, 2]);
  });

  it('leaves a release that left publishing to the caller, which plans again', async () => {
    const releases = new MemoryReleases();
    const agg = await publishing(releases, 'RE_00000003');
    releases.beforeChange = () => {
      const r = releases.releases.get('RE_00000003');
      if (r) r.release.state = 'canceling';
    };
    await expect(claimedVersion({ releases, pause: noPause }, agg)).rejects.toMatchObject({
      failed: [{ kind: 'release', id: 'RE_00000003' }],
    });
    expect(releases.versions.size).toBe(0);
  });
});
