import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Effect, PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { type ITopic, Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { acknowledge } from './nag.js';

export interface AlarmTopicProps {
  /** Prefix of the deployment (the topic's display name, the key's alias). */
  prefix: string;
  /** An e-mail address subscribed to the topic (AWS asks it to confirm first). */
  email?: string;
  /** An existing topic the alarms notify as well (alarmTopicArn). */
  existingTopicArn?: string;
}

/** The only KMS actions a service needs to publish to a topic encrypted with a key: a data key, and reading it. */
export const PUBLISH_KMS_ACTIONS = ['kms:GenerateDataKey*', 'kms:Decrypt'];

/**
 * The topic the alarms notify, encrypted with a customer-managed KMS key of its own (rotated yearly). CloudWatch
 * publishes an alarm's notification as the service principal `cloudwatch.amazonaws.com`, and SNS encrypts the message
 * with the topic's key on its behalf: the key's policy must grant that principal `kms:GenerateDataKey*` and
 * `kms:Decrypt`, and the AWS-managed key `alias/aws/sns` cannot, since its policy cannot be changed (AWS's SNS key
 * management guide, docs/security.md). The grant is conditioned on this account and on the ARNs of this deployment's
 * alarms (`allowAlarms`), so no other account's or alarm's notifications can use the key.
 */
export class AlarmTopic extends Construct {
  readonly topic: Topic;
  readonly key: Key;
  /** Every topic the alarms notify: this one, and the operator's own if given. */
  readonly destinations: ITopic[];

  constructor(scope: Construct, id: string, props: AlarmTopicProps) {
    super(scope, id);
    this.key = new Key(this, 'Key', {
      description: `${props.prefix}: encrypts the alarm topic; CloudWatch may use it for this deployment's alarms only`,
      alias: `alias/${props.prefix}-alarms`,
      enableKeyRotation: true,
      // It encrypts notifications in flight only: nothing outlives the stack that needs it.
      removalPolicy: RemovalPolicy.DESTROY,
      pendingWindow: Duration.days(7),
    });
    this.topic = new Topic(this, 'Topic', {
      displayName: `${props.prefix} alarms`,
      masterKey: this.key,
      enforceSSL: true,
    });
    if (props.email) {
      const email = this.topic.addSubscription(new EmailSubscription(props.email));
      acknowledge(
        email,
        'Serverless-SNSRedrivePolicy',
        'An alarm e-mail that cannot be delivered is not worth keeping: the alarm, its state and its history stay in ' +
          'CloudWatch, and the other subscribers of the topic get it.',
      );
    }
    this.destinations = [
      this.topic,
      ...(props.existingTopicArn ? [Topic.fromTopicArn(this, 'Existing', props.existingTopicArn)] : []),
    ];
  }

  /**
   * Lets CloudWatch use the key for the alarms of these names (in this stack's account and region), and for no
   * other: called once, with every alarm of the deployment.
   */
  allowAlarms(alarmNames: string[]): void {
    const stack = Stack.of(this);
    const arns = alarmNames.map((name) =>
      stack.formatArn({
        service: 'cloudwatch',
        resource: 'alarm',
        resourceName: name,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      }),
    );
    this.key.addToResourcePolicy(
      new PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        effect: Effect.ALLOW,
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: PUBLISH_KMS_ACTIONS,
        resources: ['*'],
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account },
          ArnLike: { 'aws:SourceArn': arns },
        },
      }),
    );
  }
}
