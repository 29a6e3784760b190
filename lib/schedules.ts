import { Duration } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { WorkerFunction } from './orchestration-manifest.js';

export type ScheduleKind = NonNullable<WorkerFunction['schedule']>;

export interface WorkerSchedulesProps {
  /** Minutes between runs, per schedule kind of lib/orchestration-manifest.ts. */
  minutes: Record<ScheduleKind, number>;
  /** The scheduled workers and their functions. */
  targets: { worker: WorkerFunction; fn: IFunction }[];
  /** Where a run EventBridge could not deliver goes (the functions' own failure destination too). */
  deadLetterQueue: IQueue;
}

/** EventBridge's retries of a run Lambda did not accept (throttled, unavailable), within the run's interval. */
export const SCHEDULE_RETRY_ATTEMPTS = 2;

/**
 * A scheduled run is as old as it may get before the next one supersedes it: its interval (EventBridge accepts 1
 * minute to 24 hours).
 */
export function scheduleMaxEventAge(minutes: number): Duration {
  return Duration.minutes(Math.min(Math.max(minutes, 1), 24 * 60));
}

/**
 * One EventBridge rule per scheduled worker (health checks and the reconciler every minute by default, the study
 * sync hourly). EventBridge retries a run Lambda did not accept, for as long as the run is not older than its
 * interval, and puts one it could not deliver in the dead-letter queue. Delivered runs are not retried by Lambda (the
 * functions' asynchronous retries are 0, lib/coordinator-stack.ts): the next run is the retry, and a repeated health
 * check would count a service's failure twice; a run that fails goes to the same queue.
 */
export class WorkerSchedules extends Construct {
  readonly rules: Record<string, Rule> = {};

  constructor(scope: Construct, id: string, props: WorkerSchedulesProps) {
    super(scope, id);
    for (const { worker, fn } of props.targets) {
      if (!worker.schedule) continue;
      const minutes = props.minutes[worker.schedule];
      this.rules[worker.name] = new Rule(this, `${worker.name}Schedule`, {
        description: `Runs ${worker.name} (${worker.schedule})`,
        schedule: Schedule.rate(Duration.minutes(minutes)),
        targets: [
          new LambdaFunction(fn, {
            retryAttempts: SCHEDULE_RETRY_ATTEMPTS,
            maxEventAge: scheduleMaxEventAge(minutes),
            deadLetterQueue: props.deadLetterQueue,
          }),
        ],
      });
    }
  }
}
