import type { WorkJob, WorkQueue } from './queue.js';
import type { TaskService } from './service.js';

/**
 * The events of the worker function: a batch of SQS messages (each a WorkJob), or the schedule's `{"kit":"sweep"}`.
 *
 * @example
 * ```ts
 * import type { WorkerEvent } from '@release-coordinator/task-service';
 *
 * const sweep: WorkerEvent = { kit: 'sweep' };
 * const jobs: WorkerEvent = {
 *   Records: [{ messageId: 'm-1', body: '{"task_id":"TA_4BTJ95CW","phase":"start"}' }],
 * };
 * ```
 */
export type WorkerEvent = { Records: { messageId: string; body: string }[] } | { kit: 'sweep' };

/**
 * The worker function's answer to a batch: the messages to deliver again (SQS partial batch responses; the CDK
 * construct turns them on).
 *
 * @example
 * ```ts
 * import type { WorkerResult } from '@release-coordinator/task-service';
 *
 * const retryOne: WorkerResult = { batchItemFailures: [{ itemIdentifier: 'm-1' }] };
 * ```
 */
export interface WorkerResult {
  batchItemFailures: { itemIdentifier: string }[];
}

/**
 * The part of the Lambda context the worker reads: how long its run has left.
 *
 * @example
 * ```ts
 * import type { WorkerContext } from '@release-coordinator/task-service';
 *
 * const context: WorkerContext = { getRemainingTimeInMillis: () => 900_000 };
 * ```
 */
export interface WorkerContext {
  /** Milliseconds until Lambda ends this run. */
  getRemainingTimeInMillis(): number;
}

/**
 * The kit's worker function on Lambda, triggered by the work queue (the worker mode's second half; the function URL
 * is the first): each message is a job, run to its end within the function's time (up to 15 minutes), reporting
 * progress on the way. 30 s before the run's time is up the work is stopped and its job sent again (`queue`), so it
 * resumes in a new run from the task store (`task.attempt`, `task.resumed`, `task.checkpoint`). A job that throws
 * (the store unreachable) is answered as a batch item failure, and SQS delivers it again after the queue's
 * visibility timeout, as after a crash; after the queue's last try it goes to the dead-letter queue. The schedule's
 * `{"kit":"sweep"}` event asks the coordinator about the tasks it gave up on, and cleans them up.
 *
 * @example
 * ```ts
 * import { createTaskService, sqsQueue, workerHandler } from '@release-coordinator/task-service';
 *
 * const queue = sqsQueue({ url: process.env.WORK_QUEUE_URL ?? '' });
 * export const worker = workerHandler(createTaskService(work, { ...options, run: 'worker', queue }), queue);
 * ```
 */
export function workerHandler(service: TaskService, queue?: WorkQueue) {
  return async (event: WorkerEvent, context?: WorkerContext): Promise<WorkerResult | undefined> => {
    if ('kit' in event) {
      if (event.kit === 'sweep') await service.sweep();
      return undefined;
    }
    const remaining = context?.getRemainingTimeInMillis();
    const stopAt = remaining === undefined ? undefined : Date.now() + Math.max(1000, remaining - 30_000);
    const batchItemFailures: { itemIdentifier: string }[] = [];
    for (const record of event.Records) {
      try {
        const job = JSON.parse(record.body) as WorkJob;
        if ((await service.runJob(job, { stopAt })) === 'paused') {
          if (!queue) throw new Error('paused work, and no queue to send it again');
          await queue.send(job);
        }
      } catch {
        batchItemFailures.push({ itemIdentifier: record.messageId });
      }
    }
    return { batchItemFailures };
  };
}
