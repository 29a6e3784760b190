import type { ReleaseRepository } from '../coordinator/ports.js';
import type { TaskTokens } from './ports.js';

/**
 * The wake-up latch between the poll loop and everything that should cut a wait short (a task reporting staged,
 * published or failed; publish; cancel; a health failure). Two attributes on the release item, each changed by one
 * atomic UpdateItem that returns the previous values (ReleaseRepository.exchangeExtras):
 *
 *   waitToken    the task token of the callback state now waiting (PollWait / WaitForPublish), if any
 *   wakePending  a wake arrived that no poll round has seen yet
 *
 * - A waiting state stores its token. If a wake was pending, it answers its own token at once.
 * - A wake sets wakePending and takes the stored token; if it got one it answers it (SendTaskSuccess). A token that
 *   no longer waits (timed out, already answered) is harmless: wakePending stays set.
 * - A poll round clears wakePending BEFORE it reads the release, so a wake is either seen by that read or leaves the
 *   flag set for the next wait, which then returns at once. A wake is never lost, whether it lands during a wait,
 *   during a round, or between the two; and it costs at most one extra round.
 */
export const WAIT_TOKEN = 'waitToken';
export const WAKE_PENDING = 'wakePending';
/** The name of the execution now driving the release (the first state records it). */
export const EXECUTION_NAME = 'executionName';

export type ArmOutcome = 'waiting' | 'woken' | 'missing';

export class WakeLatch {
  constructor(
    private readonly releases: Pick<ReleaseRepository, 'exchangeExtras'>,
    private readonly tokens: TaskTokens,
  ) {}

  /** Called by the waiting state's function with its fresh token. */
  async arm(releaseId: string, token: string): Promise<ArmOutcome> {
    const previous = await this.releases.exchangeExtras(releaseId, { set: { [WAIT_TOKEN]: token } });
    if (previous === null) {
      // The release is gone: let the execution move on and find that out.
      await this.tokens.succeed(token, { missing: true });
      return 'missing';
    }
    if (previous[WAKE_PENDING] === true) {
      await this.tokens.succeed(token, { latched: true });
      return 'woken';
    }
    return 'waiting';
  }

  /** Wakes the release's loop now, or at its next wait. Returns the release's extras before the wake (null: gone). */
  async wake(releaseId: string): Promise<{ delivered: boolean; extras: Record<string, unknown> | null }> {
    const previous = await this.releases.exchangeExtras(releaseId, {
      set: { [WAKE_PENDING]: true },
      remove: [WAIT_TOKEN],
    });
    const token = previous?.[WAIT_TOKEN];
    if (typeof token !== 'string') return { delivered: false, extras: previous };
    const outcome = await this.tokens.succeed(token, { woken: true });
    return { delivered: outcome === 'delivered', extras: previous };
  }

  /** A poll round starts: clear the flag before reading (see above). Null when the release does not exist. */
  async beginRound(releaseId: string, executionName?: string): Promise<Record<string, unknown> | null> {
    return this.releases.exchangeExtras(releaseId, {
      set: { [WAKE_PENDING]: false, ...(executionName ? { [EXECUTION_NAME]: executionName } : {}) },
    });
  }
}
