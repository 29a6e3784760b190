import { describe, expect, it } from 'vitest';
import type { WorkJob } from '#packages/task-service/src/queue.js';
import type { TaskService } from '#packages/task-service/src/service.js';
import { workerHandler } from '#packages/task-service/src/worker.js';

/** The Lambda worker: jobs from SQS records, failures for SQS to deliver again, paused work sent again, sweeps. */
function fakeService(outcomes: Record<string, 'done' | 'paused' | 'throw'>) {
  const ran: { job: WorkJob; stopAt?: number }[] = [];
  let swept = 0;
  const service = {
    runJob: async (job: WorkJob, opts: { stopAt?: number } = {}) => {
      ran.push({ job, stopAt: opts.stopAt });
      const outcome = outcomes[job.task_id] ?? 'done';
      if (outcome === 'throw') throw new Error('store down');
      return outcome;
    },
    sweep: async () => {
      swept++;
      return { asked: 0, canceled: 0 };
    },
  } as unknown as TaskService;
  return { service, ran, swept: () => swept };
}

const record = (id: string, job: WorkJob) => ({ messageId: id, body: JSON.stringify(job) });

describe('workerHandler', () => {
  it('runs each job, answers the ones that failed for SQS to deliver again, and sends paused work again', async () => {
    const f = fakeService({ TA_2: 'throw', TA_3: 'paused' });
    const sent: WorkJob[] = [];
    const worker = workerHandler(f.service, { send: async (job) => void sent.push(job) });
    const before = Date.now();
    const out = await worker(
      {
        Records: [
          record('m-1', { task_id: 'TA_1', phase: 'start' }),
          record('m-2', { task_id: 'TA_2', phase: 'publish' }),
          record('m-3', { task_id: 'TA_3', phase: 'start' }),
          { messageId: 'm-4', body: 'not json' },
        ],
      },
      { getRemainingTimeInMillis: () => 900_000 },
    );
    expect(out).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-2' }, { itemIdentifier: 'm-4' }] });
    expect(sent).toEqual([{ task_id: 'TA_3', phase: 'start' }]);
    // The work is stopped 30 s before the run's time is up.
    const stopAt = f.ran[0].stopAt ?? 0;
    expect(stopAt - before).toBeGreaterThanOrEqual(869_000);
    expect(stopAt - Date.now()).toBeLessThanOrEqual(870_000);
  });

  it('sweeps on the schedule’s event', async () => {
    const f = fakeService({});
    expect(await workerHandler(f.service)({ kit: 'sweep' })).toBeUndefined();
    expect(f.swept()).toBe(1);
  });
});
