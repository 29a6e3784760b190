import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { localQueue, sqsQueue, type WorkJob } from '#packages/task-service/src/queue.js';

/** The worker mode's queues: SQS on AWS, and the same retries in this process locally. */
describe('sqsQueue', () => {
  it('sends each job as one message, its JSON body, with a delay when asked', async () => {
    const sqs = mockClient(SQSClient);
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
    const queue = sqsQueue({
      url: 'https://sqs.test/123/work',
      client: new SQSClient({ region: 'us-east-1' }),
    });
    await queue.send({ task_id: 'TA_1', phase: 'start' });
    await queue.send({ task_id: 'TA_1', phase: 'cancel' }, 2000);
    expect(sqs.commandCalls(SendMessageCommand).map((c) => c.args[0].input)).toEqual([
      { QueueUrl: 'https://sqs.test/123/work', MessageBody: '{"task_id":"TA_1","phase":"start"}' },
      {
        QueueUrl: 'https://sqs.test/123/work',
        MessageBody: '{"task_id":"TA_1","phase":"cancel"}',
        DelaySeconds: 900,
      },
    ]);
  });
});

describe('localQueue', () => {
  it('runs each job in this process; one that throws runs again, and is given up after maxReceives', async () => {
    const runs: string[] = [];
    const lines: string[] = [];
    const queue = localQueue({ retrySeconds: 0.01, maxReceives: 3, log: (l) => lines.push(l) });
    queue.attach?.(async (job: WorkJob) => {
      runs.push(`${job.task_id} ${job.phase}`);
      if (job.task_id === 'TA_BAD') throw new Error('store down');
      return runs.filter((r) => r === 'TA_P start').length === 1 && job.task_id === 'TA_P'
        ? 'paused'
        : 'done';
    });
    await queue.send({ task_id: 'TA_1', phase: 'start' });
    await queue.send({ task_id: 'TA_BAD', phase: 'publish' });
    await queue.send({ task_id: 'TA_P', phase: 'start' });
    await queue.idle?.();
    expect(runs.filter((r) => r === 'TA_1 start')).toHaveLength(1);
    expect(runs.filter((r) => r === 'TA_BAD publish')).toHaveLength(3);
    // A paused job is sent again at once, and resumes.
    expect(runs.filter((r) => r === 'TA_P start')).toHaveLength(2);
    expect(lines).toEqual([
      expect.stringMatching(/TA_BAD publish: given up after 3 runs: Error: store down/),
    ]);
  });

  it('drops waiting jobs once stopped', async () => {
    const runs: string[] = [];
    const queue = localQueue();
    queue.attach?.(async (job) => {
      runs.push(job.task_id);
      return 'done';
    });
    await queue.send({ task_id: 'TA_1', phase: 'start' }, 0.05);
    queue.stop?.();
    await new Promise((r) => setTimeout(r, 80));
    expect(runs).toEqual([]);
  });
});
