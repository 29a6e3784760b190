import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { acknowledge } from './nag.js';

/**
 * Where asynchronous work that failed for good is kept, for an operator to look at: the events of a Lambda function's
 * asynchronous invocations that failed every attempt (its on-failure destination) and the events an EventBridge rule
 * could not deliver (its targets' dead-letter queue). Each message is the event with the error (Lambda adds the
 * request and response context); an alarm fires when one arrives (lib/observability.ts, docs/operations.md).
 */
export class FailureQueue extends Construct {
  readonly queue: Queue;

  constructor(scope: Construct, id: string, props: { description: string }) {
    super(scope, id);
    this.queue = new Queue(this, 'Queue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // SQS's longest retention: time for an operator to read the failure and act on it.
      retentionPeriod: Duration.days(14),
      // Failure records of stateless work; nothing in them is the only copy of any data.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    acknowledge(
      this.queue,
      'AwsSolutions-SQS3',
      `${props.description}: this queue is itself the dead-letter queue (nothing consumes it, so nothing could fail to).`,
    );
    acknowledge(
      this.queue,
      'Serverless-SQSRedrivePolicy',
      `${props.description}: a dead-letter queue has no redrive policy of its own; its messages wait for an operator.`,
    );
  }
}
