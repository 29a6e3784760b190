import {
  CALLBACK_RETRY_STATUSES,
  CallbackAnswer,
  CoordinatorError,
  REQUEST_ID_HEADER,
  type TaskCallback,
} from './contract.js';
import type { TokenSource } from './token.js';

/**
 * What a callback came to, which says whether the work should go on:
 *
 * - `recorded`: the coordinator has it;
 * - `ended`: the task or its release has ended (a 200 naming the task canceled or failed when that is not what was
 *   reported, or a 409 saying the task may not change from an end state, or its release is being canceled or is
 *   over): stop the work;
 * - `lost`: not recorded after the retries (or refused for good, e.g. 400 or 403); the polls will tell.
 *
 * @example
 * ```ts
 * import type { CallbackOutcome } from '@release-coordinator/task-service';
 *
 * const goOn = (outcome: CallbackOutcome) => outcome !== 'ended';
 * ```
 */
export type CallbackOutcome = 'recorded' | 'ended' | 'lost';

/**
 * Where and how `reporter` sends the callbacks.
 *
 * @example
 * ```ts
 * import { clientCredentials, type ReporterOptions } from '@release-coordinator/task-service';
 *
 * const options: ReporterOptions = {
 *   coordinatorUrl: 'https://coordinator.example.org',
 *   token: clientCredentials({
 *     tokenUrl: 'https://auth.example.org/oauth2/token',
 *     clientId: 'stager',
 *     clientSecret: process.env.CLIENT_SECRET ?? '',
 *   }),
 *   attempts: 3,
 * };
 * ```
 */
export interface ReporterOptions {
  /** The coordinator's base URL; callbacks go to `{coordinatorUrl}/tasks/<task_id>`. */
  coordinatorUrl: string;
  /** The service's own bearer token; a 401 invalidates it and the callback is sent again once, with a new one. */
  token?: TokenSource;
  /** Tries per callback (default 5). */
  attempts?: number;
  /** The longest wait between two tries, in seconds (default 30), whatever Retry-After says. */
  maxWaitSeconds?: number;
  /** The fetch that sends the callbacks (default: the platform's). */
  fetch?: typeof fetch;
  /** How to wait between tries (tests pass one that does not). */
  sleep?: (ms: number) => Promise<void>;
  /** The clock, in milliseconds since the epoch, for a Retry-After given as a date. */
  now?: () => number;
  /** One line per callback sent, and per failure. */
  log?: (line: string) => void;
}

/**
 * Sends one callback: a task's new state, progress or both, with the coordinator's correlation id (`requestId`) of
 * the action it answers. Once `signal` aborts (the task was canceled), no further attempt is made: `ended`.
 *
 * @example
 * ```ts
 * import { type Report, reporter } from '@release-coordinator/task-service';
 *
 * const report: Report = reporter({ coordinatorUrl: 'http://127.0.0.1:3000' });
 * await report('TA_4BTJ95CW', { progress: 40 });
 * ```
 */
export type Report = (
  taskId: string,
  body: TaskCallback,
  requestId?: string,
  signal?: AbortSignal,
) => Promise<CallbackOutcome>;

/** A 409 that says the work should stop: the task has ended, or its release is being canceled or is over. */
const FINAL_CONFLICT =
  /release is over|from (published|canceled|failed)\b|(while its release is|belongs to a release that is) (canceling|published|canceled|failed|missing)/i;

/**
 * Retry-After in seconds: a number of seconds or an HTTP date; undefined when absent or unreadable.
 *
 * @example
 * ```ts
 * import { retryAfterSeconds } from '@release-coordinator/task-service';
 *
 * retryAfterSeconds('2', Date.now()); // 2
 * retryAfterSeconds('Wed, 21 Oct 2026 07:28:00 GMT', Date.parse('2026-10-21T07:27:30Z')); // 30
 * ```
 */
export function retryAfterSeconds(value: string | null, now: number): number | undefined {
  if (!value) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - now) / 1000);
}

/**
 * The callbacks: `PATCH {coordinator}/tasks/<id>` with a new state or progress, as soon as something changes (the
 * coordinator polls with get_status too, so a lost callback only costs time). A 409 with Retry-After (concurrent
 * writers), a 429 or 503, or a connection error, is retried after the answer's Retry-After (else 1, 2, 4 … s), at most `attempts` times and never waiting
 * more than `maxWaitSeconds` at once. The answer (CallbackOutcome) says whether the work should go on.
 *
 * @example
 * ```ts
 * import { reporter } from '@release-coordinator/task-service';
 *
 * const report = reporter({ coordinatorUrl: 'http://127.0.0.1:3000', token: async () => 'a-bearer-token' });
 * if ((await report('TA_4BTJ95CW', { state: 'staged', progress: 100 })) === 'ended') {
 *   // the release was canceled meanwhile: discard the work
 * }
 * ```
 */
export function reporter(opts: ReporterOptions): Report {
  const fetchImpl = opts.fetch ?? fetch;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const now = opts.now ?? Date.now;
  const attempts = opts.attempts ?? 5;
  const maxWait = opts.maxWaitSeconds ?? 30;
  const log = opts.log ?? (() => {});
  const base = opts.coordinatorUrl.replace(/\/+$/, '');
  return async (taskId, body, requestId, signal) => {
    let refreshed = false;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (signal?.aborted) return 'ended';
      let wait: number | undefined;
      let status = 0;
      try {
        const token = await opts.token?.();
        const res = await fetchImpl(`${base}/tasks/${encodeURIComponent(taskId)}`, {
          method: 'PATCH',
          headers: {
            'Content-Type': 'application/json',
            ...(token ? { Authorization: `Bearer ${token}` } : {}),
            ...(requestId ? { [REQUEST_ID_HEADER]: requestId } : {}),
          },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(10_000),
        });
        status = res.status;
        const text = await res.text();
        const answer = safeJson(text);
        log(`PATCH /tasks/${taskId} ${JSON.stringify(body)} -> ${status}`);
        if (status === 200) {
          const task = CallbackAnswer.safeParse(answer);
          const ended = task.success && (task.data.state === 'canceled' || task.data.state === 'failed');
          return ended && task.data.state !== body.state ? 'ended' : 'recorded';
        }
        if (status === 409) {
          const error = CoordinatorError.safeParse(answer);
          if (error.success && FINAL_CONFLICT.test(error.data.error.message)) return 'ended';
          // Only a 409 with Retry-After passes with time (concurrent writers); any other is the coordinator's
          // final word on this report.
          if (!res.headers.has('retry-after')) return 'lost';
        }
        if (status === 401 && opts.token?.invalidate && !refreshed) {
          // A token the coordinator no longer takes: fetch a new one, once.
          refreshed = true;
          opts.token.invalidate();
          attempt--;
          continue;
        }
        if (!(CALLBACK_RETRY_STATUSES as readonly number[]).includes(status)) return 'lost';
        wait = retryAfterSeconds(res.headers.get('retry-after'), now());
      } catch (err) {
        log(`PATCH /tasks/${taskId} failed: ${(err as Error).message}`);
      }
      if (attempt === attempts) break;
      await sleep(Math.min(maxWait, wait ?? 2 ** (attempt - 1)) * 1000);
    }
    return 'lost';
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
