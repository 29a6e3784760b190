import type { OrchestrationState } from '../coordinator/ports.js';
import { log } from '../shared/log.js';
import type { TaskTokens } from './ports.js';

/**
 * The wake-up latch between the poll loop and everything that should cut a wait short (a task reporting staged,
 * published or failed; publish; cancel; a health failure). Attributes on the release item, each changed by one
 * atomic UpdateItem that returns the previous values (OrchestrationState.exchangeExtras):
 *
 *   waitToken    the task token of the callback state now waiting (PollWait / WaitForPublish), if any
 *   waitKind     which of the two it is: 'poll' or 'staged'
 *   wakePending  a wake arrived that no poll round has seen yet
 *   waitSeq      the order of the wait that stored waitToken (waitSequence: generation, execution start, steps)
 *
 * - A waiting state stores its token. If a wake was pending, it answers its own token at once.
 * - Only a newer wait replaces a token. A wait's arm can land after its wait already timed out and the execution
 *   went on to its next wait (a slow invocation, a retried write); were that late arm to overwrite the next wait's
 *   token, a wake would answer the dead token and the live wait would sleep through it (a staged release waits a day
 *   for publish). So the arm writes only while waitSeq is at most its own, and a late one changes nothing.
 * - A wake sets wakePending and reads the stored token; if there is one it answers it (SendTaskSuccess) and only
 *   then removes it (if no newer wait replaced it). A token that no longer waits (timed out, already answered) is
 *   harmless: wakePending stays set. A SendTaskSuccess that fails (throttled, say) leaves the token in place, so the
 *   reconciler (reconcile.ts), or the next wake, can still deliver it.
 * - A poll round clears wakePending BEFORE it reads the release, so a wake is either seen by that read or leaves the
 *   flag set for the next wait, which then returns at once. A wake is never lost, whether it lands during a wait,
 *   during a round, or between the two; and it costs at most one extra round.
 */
export const WAIT_TOKEN = 'waitToken';
export const WAIT_KIND = 'waitKind';
export const WAKE_PENDING = 'wakePending';
export const WAIT_SEQ = 'waitSeq';

/**
 * The order of a wait, as a string that sorts like the tuple: its execution's generation; that execution's start
 * time (on AWS one generation is one execution, but a restarted local endpoint starts the same generation afresh,
 * its steps counted from 0 again); then the step count the execution had reached ($.step.rounds: every ReleaseStep
 * between two waits raises it). Two attempts of the same wait state (a Retry) share it.
 */
export function waitSequence(generation: number, startedAt: string | undefined, rounds: number): string {
  const started = startedAt === undefined ? Number.NaN : Date.parse(startedAt);
  const pad = (n: number, width: number) => String(Math.max(0, Math.trunc(n))).padStart(width, '0');
  return `${pad(generation, 10)}.${pad(Number.isFinite(started) ? started : 0, 15)}.${pad(rounds, 10)}`;
}

export type WaitKind = 'poll' | 'staged';
/** superseded: a newer wait has stored its token, so this wait is over and nothing was written. */
export type ArmOutcome = 'waiting' | 'woken' | 'missing' | 'superseded';
/** delivered: a waiting state was answered; latched: nobody waits, the flag is set; failed: see above. */
export type WakeOutcome = 'delivered' | 'latched' | 'failed';

export class WakeLatch {
  constructor(
    private readonly releases: OrchestrationState,
    private readonly tokens: TaskTokens,
  ) {}

  /**
   * Called by the waiting state's function with its fresh token and its order (waitSequence). Without an order (an
   * execution started from a definition that did not pass one) the token is stored unconditionally, as before.
   */
  async arm(releaseId: string, token: string, kind: WaitKind = 'poll', seq?: string): Promise<ArmOutcome> {
    const change = { set: { [WAIT_TOKEN]: token, [WAIT_KIND]: kind } };
    const previous =
      seq === undefined
        ? await this.releases.exchangeExtras(releaseId, change)
        : await this.releases.exchangeExtrasInOrder(releaseId, change, { name: WAIT_SEQ, value: seq });
    if (previous === 'superseded') {
      log.info('late wait arm ignored: a newer wait holds the token', { releaseId, kind, seq });
      return 'superseded';
    }
    if (previous === null) {
      // The release is gone: let the execution move on and find that out.
      await this.tokens.succeed(token, { missing: true });
      return 'missing';
    }
    if (previous[WAKE_PENDING] === true) {
      await this.tokens.succeed(token, { latched: true });
      await this.releases.removeExtraIf(releaseId, WAIT_TOKEN, token);
      return 'woken';
    }
    return 'waiting';
  }

  /**
   * Wakes the release's loop now, or at its next wait. Returns the outcome and the release's extras before the wake
   * (null: the release is gone). Only the store's own errors are thrown; a failed delivery is `failed`.
   */
  async wake(releaseId: string): Promise<{ outcome: WakeOutcome; extras: Record<string, unknown> | null }> {
    const previous = await this.releases.exchangeExtras(releaseId, { set: { [WAKE_PENDING]: true } });
    const token = previous?.[WAIT_TOKEN];
    if (typeof token !== 'string') return { outcome: 'latched', extras: previous };
    let delivered: 'delivered' | 'stale';
    try {
      delivered = await this.tokens.succeed(token, { woken: true });
    } catch (err) {
      log.warn('wake not delivered; the token stays for a retry', { releaseId, error: String(err) });
      return { outcome: 'failed', extras: previous };
    }
    await this.releases.removeExtraIf(releaseId, WAIT_TOKEN, token);
    return { outcome: delivered === 'delivered' ? 'delivered' : 'latched', extras: previous };
  }

  /** A poll round starts: clear the flag before reading (see above). Null when the release does not exist. */
  async beginRound(releaseId: string): Promise<Record<string, unknown> | null> {
    return this.releases.exchangeExtras(releaseId, { set: { [WAKE_PENDING]: false } });
  }
}

/**
 * Whether a wake should be delivered (again) to a release whose execution is running: a wake that was not
 * delivered left its token and the flag, or the release is no longer staged while its execution still waits for
 * publish (the change that moved it could not set the flag).
 */
export function wakeOwed(state: string, extras: Record<string, unknown>): boolean {
  if (typeof extras[WAIT_TOKEN] !== 'string') return false;
  return extras[WAKE_PENDING] === true || (extras[WAIT_KIND] === 'staged' && state !== 'staged');
}
