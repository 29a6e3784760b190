import { Duration } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import type { WorkerFunction } from './orchestration-manifest.js';

export type ScheduleKind = NonNullable<WorkerFunction['schedule']>;

export interface WorkerSchedulesProps {
  /** Minutes between runs, per schedule kind of lib/orchestration-manifest.ts. */
  minutes: Record<ScheduleKind, number>;
  /** The scheduled workers and their functions. */
  targets: { worker: WorkerFunction; fn: IFunction }[];
}

/**
 * One EventBridge rule per scheduled worker (health checks and the reconciler every minute by default, the study
 * sync hourly). No retries: a missed run is simply the next run, and a retried health check would count a failure
 * twice.
 */
export class WorkerSchedules extends Construct {
  readonly rules: Record<string, Rule> = {};

  constructor(scope: Construct, id: string, props: WorkerSchedulesProps) {
    super(scope, id);
    for (const { worker, fn } of props.targets) {
      if (!worker.schedule) continue;
      this.rules[worker.name] = new Rule(this, `${worker.name}Schedule`, {
        description: `Runs ${worker.name} (${worker.schedule})`,
        schedule: Schedule.rate(Duration.minutes(props.minutes[worker.schedule])),
        targets: [new LambdaFunction(fn, { retryAttempts: 0 })],
      });
    }
  }
}
