import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';

/**
 * One piece of work for a worker: run a task's `start` or `publish` (while the task is `running` or `publishing`),
 * or its `cancel()` clean-up. The task itself is read from the task store when the job runs, so a job sent twice, or
 * run again after a crash, does what the store says is left to do.
 *
 * @example
 * ```ts
 * import type { WorkJob } from '@release-coordinator/task-service';
 *
 * const job: WorkJob = { task_id: 'TA_4BTJ95CW', phase: 'start' };
 * ```
 */
export interface WorkJob {
  task_id: string;
  phase: 'start' | 'publish' | 'cancel';
}

/**
 * What a job came to: `done` (nothing left to do for it), or `paused` (its run stopped before its time ran out: send
 * it again, and the next run resumes from the task store).
 *
 * @example
 * ```ts
 * import type { JobOutcome } from '@release-coordinator/task-service';
 *
 * const again = (outcome: JobOutcome) => outcome === 'paused';
 * ```
 */
export type JobOutcome = 'done' | 'paused';

/**
 * Where the kit sends the work in worker mode (`run: 'worker'`): an SQS queue on AWS (`sqsQueue`), or a queue in
 * this process (`localQueue`, the default), which runs the jobs as the Lambda worker would.
 *
 * @example
 * ```ts
 * import type { WorkQueue } from '@release-coordinator/task-service';
 *
 * const logged: WorkQueue = { send: async (job) => console.log('would run', job) };
 * ```
 */
export interface WorkQueue {
  /** Sends a job, to run after `delaySeconds` (default at once). */
  send(job: WorkJob, delaySeconds?: number): Promise<void>;
  /** A queue that runs jobs itself (localQueue) is given the service's job runner. */
  attach?(run: (job: WorkJob) => Promise<JobOutcome>): void;
  /** Resolves when no job runs (tests; a graceful stop). */
  idle?(): Promise<void>;
  /** Stops running jobs; those waiting are dropped (the task store keeps what is left to do). */
  stop?(): void;
}

/**
 * How `sqsQueue` sends.
 *
 * @example
 * ```ts
 * import type { SqsQueueOptions } from '@release-coordinator/task-service';
 *
 * const options: SqsQueueOptions = { url: process.env.WORK_QUEUE_URL ?? '' };
 * ```
 */
export interface SqsQueueOptions {
  /** The queue's URL (the CDK construct passes it as WORK_QUEUE_URL). */
  url: string;
  /** A client of your own (a region, an endpoint); default: the SDK's defaults. */
  client?: SQSClient;
}

/**
 * The work queue on AWS: each job is an SQS message (`SendMessage`, the job as its JSON body), which the worker
 * function (`workerHandler`, triggered by the queue) runs. A worker that crashes or runs out of time leaves the
 * message on the queue, which delivers it again after its visibility timeout: the job resumes from the task store.
 *
 * @example
 * ```ts
 * import { createTaskService, dynamoDbStore, sqsQueue } from '@release-coordinator/task-service';
 *
 * const service = createTaskService(work, {
 *   name: 'stager',
 *   auth: { mode: 'jwks', issuer: 'https://auth.example.org' },
 *   store: dynamoDbStore({ table: 'stager-tasks' }),
 *   run: 'worker',
 *   queue: sqsQueue({ url: process.env.WORK_QUEUE_URL ?? '' }),
 * });
 * ```
 */
export function sqsQueue(opts: SqsQueueOptions): WorkQueue {
  const client = opts.client ?? new SQSClient({});
  return {
    async send(job, delaySeconds) {
      await client.send(
        new SendMessageCommand({
          QueueUrl: opts.url,
          MessageBody: JSON.stringify(job),
          ...(delaySeconds ? { DelaySeconds: Math.min(900, Math.ceil(delaySeconds)) } : {}),
        }),
      );
    },
  };
}

/**
 * How `localQueue` retries.
 *
 * @example
 * ```ts
 * import type { LocalQueueOptions } from '@release-coordinator/task-service';
 *
 * const options: LocalQueueOptions = { retrySeconds: 5, maxReceives: 3 };
 * ```
 */
export interface LocalQueueOptions {
  /** How long a job that failed waits before it runs again, like a message's visibility timeout (default 10 s). */
  retrySeconds?: number;
  /** How many times a job runs before it is given up, like the queue's dead-letter rule (default 5). */
  maxReceives?: number;
  /** Where a job given up is logged. */
  log?: (line: string) => void;
}

/**
 * The worker mode in this process: the jobs the front would send to SQS run here, one task at a time each, with the
 * Lambda worker's retries (a job that throws runs again after `retrySeconds`, at most `maxReceives` times). What is
 * lost when the process ends is resumed from the task store when it starts again (`runTaskService` does it).
 * Locally this is the Lambda worker mode; a Node server on AWS (ECS, Fargate) may use it as well.
 *
 * @example
 * ```ts
 * import { createTaskService, fileStore, localQueue } from '@release-coordinator/task-service';
 *
 * const service = createTaskService(work, {
 *   name: 'stager',
 *   auth: { mode: 'none' },
 *   store: fileStore('.data/tasks.json'),
 *   run: 'worker',
 *   queue: localQueue({ retrySeconds: 2 }),
 * });
 * ```
 */
export function localQueue(opts: LocalQueueOptions = {}): WorkQueue {
  const retryMs = (opts.retrySeconds ?? 10) * 1000;
  const maxReceives = opts.maxReceives ?? 5;
  const log = opts.log ?? (() => {});
  let run: ((job: WorkJob) => Promise<JobOutcome>) | undefined;
  let stopped = false;
  const running = new Set<Promise<void>>();
  const timers = new Set<ReturnType<typeof setTimeout>>();

  const deliver = (job: WorkJob, receive: number) => {
    if (stopped || !run) return;
    const once = run;
    const p = (async () => {
      try {
        if ((await once(job)) === 'paused') later(job, 0, 1);
      } catch (err) {
        if (receive >= maxReceives)
          log(`${job.task_id} ${job.phase}: given up after ${receive} runs: ${String(err)}`);
        else later(job, retryMs, receive + 1);
      }
    })().finally(() => running.delete(p));
    running.add(p);
  };
  const later = (job: WorkJob, ms: number, receive: number) => {
    if (stopped) return;
    const t = setTimeout(() => {
      timers.delete(t);
      deliver(job, receive);
    }, ms);
    timers.add(t);
  };

  return {
    async send(job, delaySeconds) {
      later(job, (delaySeconds ?? 0) * 1000, 1);
    },
    attach(runner) {
      run = runner;
    },
    async idle() {
      while (running.size || timers.size) {
        if (running.size) await Promise.all(running);
        else await new Promise((r) => setTimeout(r, 20));
      }
    },
    stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}
