import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import {
  EventSourceMapping,
  FilterCriteria,
  FilterRule,
  type IFunction,
  StartingPosition,
} from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { STREAM_BATCHES, type WorkerFunction } from './orchestration-manifest.js';
import { TABLES } from './table-definitions.js';
import { grantStreamRead } from './tables.js';

/**
 * How a stream worker reads its table's stream. The wake it sends should come within a second of the write:
 * Lambda polls each shard four times a second and, without a batching window, invokes as soon as a poll returns
 * records, so no window is set (a window would only save invocations that the filter already makes rare). A batch
 * that throws is retried a few times, halved each time to isolate a bad record, and then skipped, its shard
 * positions sent to the failure queue: a poison batch never holds up the shard, and a wake that was never sent costs
 * at most one poll interval (the poll loop is the safety net).
 */
export const STREAM_READING = {
  batchSize: STREAM_BATCHES.batchSize,
  parallelizationFactor: STREAM_BATCHES.parallel,
  retryAttempts: STREAM_BATCHES.retries,
  bisectBatchOnError: true,
  startingPosition: StartingPosition.LATEST,
} as const;

export interface StreamTriggersProps {
  /** The stream workers of lib/orchestration-manifest.ts, their functions and the tables whose streams they read. */
  targets: { worker: WorkerFunction; fn: IFunction; table: ITable }[];
  /** Where the shard positions of a batch that failed every attempt go (lib/failure-queue.ts). */
  onFailure: IQueue;
}

/**
 * One Lambda event source mapping per stream worker, on its table's stream (new and old images, lib/tables.ts),
 * filtered to inserts and modifications of items whose sort key starts with the worker's `skPrefix`: Lambda
 * discards every other record before invoking, so only those invoke (and bill) the function. Reading the stream is
 * granted on that stream alone.
 */
export class StreamTriggers extends Construct {
  readonly mappings: Record<string, EventSourceMapping> = {};

  constructor(scope: Construct, id: string, props: StreamTriggersProps) {
    super(scope, id);
    for (const { worker, fn, table } of props.targets) {
      if (!worker.stream) continue;
      const sortKey = TABLES[worker.stream.table].sortKey.name;
      if (!table.tableStreamArn)
        throw new Error(
          `${worker.name}: table ${worker.stream.table} has no stream (lib/table-definitions.ts)`,
        );
      grantStreamRead(table, fn);
      this.mappings[worker.name] = new EventSourceMapping(this, `${worker.name}Stream`, {
        target: fn,
        eventSourceArn: table.tableStreamArn,
        ...STREAM_READING,
        onFailure: new SqsDlq(props.onFailure),
        filters: [
          FilterCriteria.filter({
            eventName: FilterRule.or('INSERT', 'MODIFY'),
            dynamodb: { Keys: { [sortKey]: { S: FilterRule.beginsWith(worker.stream.skPrefix) } } },
          }),
        ],
      });
    }
  }
}
