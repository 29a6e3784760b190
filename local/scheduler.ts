import { randomUUID } from 'node:crypto';
import type { ScheduledEvent } from 'aws-lambda';
import { log } from '#functions/shared/log.js';

/** The event EventBridge sends a scheduled Lambda, so handlers see on one machine what they see on AWS. */
export function scheduledEvent(ruleName: string, now = new Date()): ScheduledEvent {
  const region = process.env.AWS_REGION ?? 'us-east-1';
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '000000000000',
    time: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region,
    resources: [`arn:aws:events:${region}:000000000000:rule/${ruleName}`],
    detail: {},
  };
}

export interface Schedule {
  name: string;
  everyMs: number;
  /** Run once as soon as the schedule starts, then at the rate (the reconciler: resume right after a restart). */
  runNow?: boolean;
  run(): Promise<void>;
}

export interface Schedules {
  /** Stops the timers and waits for runs in progress. */
  stop(): Promise<void>;
}

/**
 * Runs each schedule at a fixed rate, like an EventBridge rate rule. A tick that finds the previous run of the same
 * schedule still going is skipped rather than stacked, and a failed run is logged; neither stops the schedule.
 */
export function startSchedules(schedules: Schedule[]): Schedules {
  const running = new Map<string, Promise<void>>();
  const tick = (s: Schedule) => {
    if (running.has(s.name)) {
      log.warn('scheduled run skipped: the previous one is still running', { schedule: s.name });
      return;
    }
    const run = s
      .run()
      .catch((err: unknown) =>
        log.error('scheduled run failed', {
          schedule: s.name,
          error: err instanceof Error ? err.message : String(err),
        }),
      )
      .finally(() => running.delete(s.name));
    running.set(s.name, run);
  };
  const timers = schedules.map((s) => setInterval(() => tick(s), s.everyMs));
  for (const s of schedules) if (s.runNow) tick(s);
  return {
    async stop() {
      for (const t of timers) clearInterval(t);
      await Promise.allSettled(running.values());
    },
  };
}
