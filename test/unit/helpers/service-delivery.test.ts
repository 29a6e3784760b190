import { App, Duration, Stack } from 'aws-cdk-lib';
import { Alarm, Metric } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { SqsQueue } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Alias, Key } from 'aws-cdk-lib/aws-kms';
import { Bucket, CfnBucket, EventType } from 'aws-cdk-lib/aws-s3';
import { SqsDestination } from 'aws-cdk-lib/aws-s3-notifications';
import { CfnSubscription, Topic } from 'aws-cdk-lib/aws-sns';
import { SqsSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { checkServiceDeliveries, type Templates } from '#test/helpers/service-delivery.js';

/** The templates of an app whose stacks `build` fills, by stack name. */
function templatesOf(build: (app: App) => void): Templates {
  // Without CDK's advisory template linter: most of a synth's time, and nothing these templates need.
  const app = new App({ builtinCloudFormationValidation: false });
  build(app);
  const assembly = app.synth();
  return Object.fromEntries(assembly.stacks.map((s) => [s.stackName, s.template]));
}

const metric = new Metric({ namespace: 'Test', metricName: 'Errors', period: Duration.minutes(5) });
const alarmTo = (stack: Stack, topic: Topic) =>
  new Alarm(stack, 'Alarm', { metric, threshold: 1, evaluationPeriods: 1 }).addAlarmAction(
    new SnsAction(topic),
  );
const grantTo = (key: Key, service: string, actions = ['kms:GenerateDataKey*', 'kms:Decrypt']) =>
  key.addToResourcePolicy(
    new PolicyStatement({ principals: [new ServicePrincipal(service)], actions, resources: ['*'] }),
  );

describe('checkServiceDeliveries', () => {
  it('fails a CloudWatch alarm that notifies a topic under the AWS-managed key alias/aws/sns', () => {
    const r = checkServiceDeliveries(
      templatesOf((app) => {
        const stack = new Stack(app, 'Ops');
        alarmTo(
          stack,
          new Topic(stack, 'Topic', { masterKey: Alias.fromAliasName(stack, 'K', 'alias/aws/sns') }),
        );
      }),
    );
    expect(r.deliveries).toHaveLength(1);
    expect(r.problems).toEqual([
      expect.stringMatching(
        /^Ops\/Alarm.* -> Ops\/Topic.* \(cloudwatch\.amazonaws\.com\): .*AWS-managed key alias\/aws\/sns/,
      ),
    ]);
  });

  it('fails a customer-managed key that grants CloudWatch too little, and passes one that grants both actions', () => {
    const check = (grant?: string[]) =>
      checkServiceDeliveries(
        templatesOf((app) => {
          const stack = new Stack(app, 'Ops');
          const key = new Key(stack, 'Key');
          if (grant) grantTo(key, 'cloudwatch.amazonaws.com', grant);
          alarmTo(stack, new Topic(stack, 'Topic', { masterKey: key }));
        }),
      ).problems;
    expect(check()).toEqual([
      expect.stringContaining('does not grant cloudwatch.amazonaws.com kms:GenerateDataKey and kms:Decrypt'),
    ]);
    expect(check(['kms:Decrypt'])).toEqual([expect.stringContaining('kms:GenerateDataKey')]);
    expect(check(['kms:GenerateDataKey*', 'kms:Decrypt'])).toEqual([]);
    expect(check(['kms:*'])).toEqual([]);
  });

  it('a grant to another service does not count', () => {
    const r = checkServiceDeliveries(
      templatesOf((app) => {
        const stack = new Stack(app, 'Ops');
        const key = new Key(stack, 'Key');
        grantTo(key, 'events.amazonaws.com');
        alarmTo(stack, new Topic(stack, 'Topic', { masterKey: key }));
      }),
    );
    expect(r.problems).toHaveLength(1);
  });

  it('follows a topic in another stack through its export', () => {
    const r = checkServiceDeliveries(
      templatesOf((app) => {
        const owner = new Stack(app, 'Owner');
        const topic = new Topic(owner, 'Topic', {
          masterKey: Alias.fromAliasName(owner, 'K', 'alias/aws/sns'),
        });
        alarmTo(new Stack(app, 'Ops'), topic);
      }),
    );
    expect(r.deliveries.map((d) => d.to)).toEqual([expect.stringMatching(/^Owner\/Topic/)]);
    expect(r.problems).toHaveLength(1);
  });

  it('checks an EventBridge rule’s queue target and dead-letter queue; SSE-SQS needs no grant', () => {
    const check = (encryption: QueueEncryption) =>
      checkServiceDeliveries(
        templatesOf((app) => {
          const stack = new Stack(app, 'Events');
          const queue = new Queue(stack, 'Dlq', { encryption });
          new Rule(stack, 'Rule', {
            schedule: Schedule.rate(Duration.minutes(1)),
            targets: [new SqsQueue(new Queue(stack, 'Target'), { deadLetterQueue: queue })],
          });
        }),
      );
    const kms = check(QueueEncryption.KMS);
    expect(kms.deliveries.map((d) => d.principal)).toEqual(['events.amazonaws.com', 'events.amazonaws.com']);
    expect(kms.problems).toEqual([
      expect.stringMatching(/Events\/Dlq.*does not grant events\.amazonaws\.com/),
    ]);
    expect(check(QueueEncryption.SQS_MANAGED).problems).toEqual([]);
    expect(check(QueueEncryption.KMS_MANAGED).problems).toEqual([expect.stringContaining('alias/aws/sqs')]);
  });

  it('checks S3 notifications, written out or through CDK (which grants the key to S3 itself)', () => {
    const written = checkServiceDeliveries(
      templatesOf((app) => {
        const stack = new Stack(app, 'Files');
        const queue = new Queue(stack, 'Queue', { encryption: QueueEncryption.KMS });
        new CfnBucket(stack, 'Bucket', {
          notificationConfiguration: {
            queueConfigurations: [{ event: 's3:ObjectCreated:*', queue: queue.queueArn }],
          },
        });
      }),
    );
    expect(written.problems).toEqual([expect.stringContaining('does not grant s3.amazonaws.com')]);
    const viaCdk = checkServiceDeliveries(
      templatesOf((app) => {
        const stack = new Stack(app, 'Files');
        const queue = new Queue(stack, 'Queue', { encryption: QueueEncryption.KMS });
        new Bucket(stack, 'Bucket').addEventNotification(EventType.OBJECT_CREATED, new SqsDestination(queue));
      }),
    );
    expect(viaCdk.deliveries.map((d) => d.principal)).toEqual(['s3.amazonaws.com']);
    expect(viaCdk.problems).toEqual([]);
  });

  it('checks SNS subscriptions of queues', () => {
    const r = checkServiceDeliveries(
      templatesOf((app) => {
        const stack = new Stack(app, 'Fanout');
        const topic = new Topic(stack, 'Topic');
        const bare = new Queue(stack, 'Bare', { encryption: QueueEncryption.KMS });
        new CfnSubscription(stack, 'Written', {
          topicArn: topic.topicArn,
          protocol: 'sqs',
          endpoint: bare.queueArn,
        });
        topic.addSubscription(
          new SqsSubscription(new Queue(stack, 'Granted', { encryption: QueueEncryption.KMS })),
        );
      }),
    );
    expect(r.deliveries).toHaveLength(2);
    expect(r.problems).toEqual([expect.stringMatching(/Fanout\/Written.*Fanout\/Bare.*sns\.amazonaws\.com/)]);
  });

  it('lists a target outside the templates apart, and ignores targets that are not topics or queues', () => {
    const r = checkServiceDeliveries(
      templatesOf((app) => {
        const stack = new Stack(app, 'Ops');
        alarmTo(
          stack,
          Topic.fromTopicArn(stack, 'Pager', 'arn:aws:sns:eu-west-1:123456789012:pager') as Topic,
        );
      }),
    );
    expect(r.deliveries).toEqual([]);
    expect(r.external).toEqual([
      {
        principal: 'cloudwatch.amazonaws.com',
        from: expect.stringMatching(/^Ops\/Alarm/),
        to: 'arn:aws:sns:eu-west-1:123456789012:pager',
      },
    ]);
  });
});
