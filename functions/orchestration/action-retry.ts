import type { Clock } from '../shared/clock.js';
import type { CallOutcome, TaskServiceCalls } from './ports.js';

/**
 * The coordinator's retry policy for actions (docs/orchestration.md, Retries). The spec counts any reply other than
 * 200 as a failure of the task; a release should not fail for a blip, so two failures that say "try again" are
 * retried first, within the action's own timeout (ACTION_TIMEOUT_SECONDS, which still bounds the whole exchange):
 *
 * - a connection error (refused, reset, host not found: kind `unreachable`): the request did not get an answer,
 *   and a service that restarts answers again in a moment. Waits 250 ms, then twice as long each time, at most 2 s.
 * - a 503 with `Retry-After` (seconds or an HTTP date): the service says when to come back. Waits what it asks
 *   (at least the backoff above); when that is beyond the time left, the action fails at once, saying so.
 *
 * Nothing else is retried: a timeout has used the whole budget, a 503 without Retry-After is the spec's "action
 * rejected", and any other answer (4xx, 500, bad body, wrong state) is the service's verdict. Every action may be
 * repeated this way: a task service must accept a repeated action (docs/task-service-api.md), and a connection that
 * failed or an answer of 503 means the service did not act on it.
 */
export const FIRST_RETRY_DELAY_MS = 250;
export const MAX_RETRY_DELAY_MS = 2000;
/** An attempt is only made with at least this much of the timeout left; otherwise the last failure stands. */
export const MIN_ATTEMPT_MS = 200;

/** Milliseconds a Retry-After header asks for (delta-seconds or HTTP date), or null when it says nothing usable. */
export function retryAfterMs(header: string | undefined, nowMs: number): number | null {
  if (header === undefined) return null;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  // Only the HTTP-date form (an IMF-fixdate such as "Wed, 21 Oct 2026 07:28:00 GMT"), not any string Date reads.
  if (!/[A-Za-z]{3},? \d/.test(value) || Number.isNaN(at)) return null;
  return Math.max(0, at - nowMs);
}

const backoff = (attempt: number) => Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * 2 ** (attempt - 1));

/** How long to wait before retrying after this failure (attempt = failures so far), or null: not retried. */
export function retryDelayMs(out: CallOutcome, attempt: number, nowMs: number): number | null {
  if (out.ok) return null;
  if (out.kind === 'unreachable') return backoff(attempt);
  if (out.kind === 'status' && out.status === 503) {
    const asked = retryAfterMs(out.retryAfter, nowMs);
    return asked === null ? null : Math.max(asked, backoff(attempt));
  }
  return null;
}

export type RetriedOutcome = CallOutcome & { attempts: number };

export const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Sends one action, retrying as above until it succeeds, fails for good, or `timeoutMs` (from now) is spent. Each
 * attempt gets the time that is left, so the exchange never outlasts the action timeout.
 */
export async function sendWithRetry(
  calls: Pick<TaskServiceCalls, 'action'>,
  url: string,
  body: Parameters<TaskServiceCalls['action']>[1],
  timeoutMs: number,
  clock: Clock,
  sleep: (ms: number) => Promise<void> = realSleep,
  /** The service's signing secrets; the HTTP client signs each attempt afresh, so a retry has its own timestamp. */
  secrets?: readonly string[],
): Promise<RetriedOutcome> {
  const started = clock.nowMs();
  const deadline = started + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    const out = await calls.action(url, body, Math.max(1, Math.round(deadline - clock.nowMs())), secrets);
    if (out.ok) return { ...out, attempts: attempt };
    const wait = retryDelayMs(out, attempt, clock.nowMs());
    const left = deadline - clock.nowMs();
    if (wait === null) return { ...describe(out, attempt, started, clock), attempts: attempt };
    if (wait + MIN_ATTEMPT_MS > left) {
      // Out of time: the last failure stands; a Retry-After that asked for more than is left says so.
      const asked = out.kind === 'status' ? retryAfterMs(out.retryAfter, clock.nowMs()) : null;
      const why =
        asked !== null
          ? `${out.reason} with Retry-After ${Math.ceil(asked / 1000)} s, later than the action timeout allows`
          : out.reason;
      return { ...describe({ ...out, reason: why }, attempt, started, clock), attempts: attempt };
    }
    await sleep(wait);
  }
}

/** The failure as the last attempt saw it, saying how many attempts were made when there was more than one. */
function describe(out: CallOutcome, attempts: number, started: number, clock: Clock): CallOutcome {
  if (out.ok || attempts === 1) return out;
  const seconds = Math.round((clock.nowMs() - started) / 100) / 10;
  return { ...out, reason: `${out.reason} (${attempts} attempts in ${seconds} s)` };
}
