import type { ReleaseAggregate } from '../coordinator/model.js';
import type { PublishedVersions, ReleaseChanges } from '../coordinator/ports.js';
import { publishedVersion } from '../coordinator/versions.js';
import { isConflict } from './changes.js';

/**
 * The version a publishing release is published under, claimed in a small transaction of its own before the change
 * that publishes it: the version's guard item (one release per version), the highest-version pointer, and the
 * release item, which records the claim (CLAIMED_VERSION) while it is still `publishing`.
 *
 * Why apart from the publishing change: releases that finish publishing together compete for the next version, and
 * all but one lose each round. Inside the publishing change every loss was that whole change (its release item, task
 * view shards, counts, studies and event) refused and planned again from a fresh read of the release. Here a loss is
 * three items and one read of the pointer, and the publishing change that follows cannot lose on the version.
 * A step that stopped between the claim and the publish (a crash, a timeout) finds the claim on the release and
 * publishes under it; a release canceled in that instant leaves its claimed version unpublished, the one way a
 * version number is skipped.
 */
export const CLAIMED_VERSION = 'claimedVersion';

/** How many times a claim is tried against a pointer that other publishes keep moving before the step gives up. */
const ATTEMPTS = 40;

export interface VersionClaimDeps {
  releases: PublishedVersions & Pick<ReleaseChanges, 'applyChange'>;
  /** The pause before attempt `n` (> 0), so that the losers of one round do not meet again at once. */
  pause?: (attempt: number) => Promise<void>;
}

const jitter = (attempt: number) =>
  new Promise<void>((resolve) => setTimeout(resolve, Math.random() * Math.min(200, 10 * attempt)));

/**
 * The release's claimed version, claiming the next one after the highest published (major or minor, by is_major)
 * if it holds none. A conflict on the release itself (it left `publishing`) is the caller's: it plans again.
 */
export async function claimedVersion(deps: VersionClaimDeps, agg: ReleaseAggregate): Promise<string> {
  const held = agg.extras[CLAIMED_VERSION];
  if (typeof held === 'string') return held;
  const pause = deps.pause ?? jitter;
  let lost: unknown;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    if (attempt > 0) await pause(attempt);
    const version = publishedVersion(await deps.releases.highestPublishedVersion(), agg.release.isMajor);
    try {
      await deps.releases.applyChange({
        releaseId: agg.release.id,
        expectState: 'publishing',
        claimVersion: version,
        setExtras: { [CLAIMED_VERSION]: version },
      });
      return version;
    } catch (err) {
      if (!isConflict(err) || !err.failed.every((f) => f.kind === 'version')) throw err;
      lost = err;
    }
  }
  throw lost;
}
