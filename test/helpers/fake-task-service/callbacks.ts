import { setTimeout as sleep } from 'node:timers/promises';
import {
  type CallbackOutcome,
  reporter,
  type TaskCallback,
  type TokenSource,
} from '#packages/task-service/src/index.js';
import type { CallbackRecord, FakeTaskServiceOptions } from './types.js';

/** Sends a callback; undefined when the fake sends none (polls only, no coordinator, or stopped). */
export type SendCallback = (
  taskId: string,
  body: TaskCallback,
  requestId: string | undefined,
) => Promise<CallbackOutcome | undefined>;

/** How many times a callback is sent when the coordinator keeps answering 409, 429 or 503. */
const ATTEMPTS = 10;

/**
 * The fake's callbacks: the kit's own reporter (its retries, Retry-After and reading of the answer), each call
 * recorded once it is over, so that a test or a benchmark reads final answers only.
 */
export function callbackSender(
  opts: FakeTaskServiceOptions,
  records: CallbackRecord[],
  stopping: AbortSignal,
): SendCallback {
  const coordinator = opts.coordinator;
  if (!coordinator || opts.callbacks === false) return async () => undefined;
  const token: TokenSource = Object.assign(async () => (await coordinator.token()) ?? null, {
    invalidate: coordinator.token.invalidate,
  });
  const scale = opts.retryAfterScale ?? 1;
  const extra = opts.quirks?.callbackExtra;

  return async (taskId, body, requestId) => {
    if (stopping.aborted) return undefined;
    const record: CallbackRecord = {
      taskId,
      ...(body.state === undefined ? {} : { state: body.state }),
      ...(body.progress === undefined ? {} : { progress: body.progress }),
      status: 0,
      ms: 0,
      attempts: 0,
      outcome: 'lost',
    };
    const t0 = performance.now();
    const send = reporter({
      coordinatorUrl: coordinator.url,
      token,
      attempts: ATTEMPTS,
      log: opts.log,
      // The pause before the next attempt; none once the fake stops, so that its callbacks end at once.
      sleep: (ms) => sleep(ms * scale, undefined, { signal: stopping }).catch(() => {}),
      fetch: async (url, init) => {
        if (stopping.aborted) throw new Error('the fake task service has stopped');
        record.attempts++;
        const sent =
          extra && typeof init?.body === 'string'
            ? { ...init, body: JSON.stringify({ ...JSON.parse(init.body), ...extra }) }
            : init;
        try {
          const res = await fetch(url, sent);
          const text = await res.text();
          record.status = res.status;
          if (res.status === 200) delete record.error;
          else record.error = text.slice(0, 300);
          return new Response(text, { status: res.status, headers: res.headers });
        } catch (err) {
          record.status = 0;
          record.error = (err as Error).message;
          throw err;
        }
      },
    });
    record.outcome = await send(taskId, body, requestId);
    record.ms = performance.now() - t0;
    records.push(record);
    return record.outcome;
  };
}
