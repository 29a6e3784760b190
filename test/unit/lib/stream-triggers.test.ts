import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AttributeType, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import type { WorkerFunction } from '#lib/orchestration-manifest.js';
import { StreamTriggers } from '#lib/stream-triggers.js';

/** The stream triggers on their own, with a probe worker (the whole app's mapping is asserted in app.test.ts). */
const worker: WorkerFunction = {
  name: 'Probe',
  entry: 'probe.ts',
  stream: { table: 'coordinator', skPrefix: 'X#' },
  tables: { coordinator: 'r' },
};

function probe(withStream: boolean) {
  const stack = new Stack(new App(), 'Probe');
  const table = new Table(stack, 'Table', {
    partitionKey: { name: 'pk', type: AttributeType.STRING },
    sortKey: { name: 'sk', type: AttributeType.STRING },
    stream: withStream ? StreamViewType.NEW_AND_OLD_IMAGES : undefined,
  });
  const fn = new LambdaFunction(stack, 'Fn', {
    runtime: Runtime.NODEJS_22_X,
    handler: 'index.handler',
    code: Code.fromInline('export const handler = async () => {};'),
  });
  const onFailure = new Queue(stack, 'Failures');
  // A worker without `stream` (a scheduled one, say) gets no mapping, even with a table beside it.
  const scheduled: WorkerFunction = { name: 'Other', entry: 'other.ts', schedule: 'reconcile', tables: {} };
  const make = () =>
    new StreamTriggers(stack, 'Triggers', {
      targets: [
        { worker, fn, table },
        { worker: scheduled, fn, table },
      ],
      onFailure,
    });
  return { stack, make };
}

describe('StreamTriggers', () => {
  it('maps a stream worker to its table stream with the sort-key prefix filter, and ignores other workers', () => {
    const { stack, make } = probe(true);
    const triggers = make();
    expect(Object.keys(triggers.mappings)).toEqual(['Probe']);
    const mappings = Object.values(
      Template.fromStack(stack).findResources('AWS::Lambda::EventSourceMapping'),
    );
    expect(mappings).toHaveLength(1);
    expect(JSON.parse(mappings[0].Properties.FilterCriteria.Filters[0].Pattern)).toEqual({
      eventName: ['INSERT', 'MODIFY'],
      dynamodb: { Keys: { sk: { S: [{ prefix: 'X#' }] } } },
    });
  });

  it('refuses a worker whose table has no stream, naming the worker and the table', () => {
    expect(() => probe(false).make()).toThrow('Probe: table coordinator has no stream');
  });
});
