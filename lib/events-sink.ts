import { EventBus } from 'aws-cdk-lib/aws-events';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { Alias } from 'aws-cdk-lib/aws-kms';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';

export interface EventsSinkProps {
  kind: 'sns' | 'eventbridge';
  /** Name of the topic or bus. */
  name: string;
}

/**
 * Where coordinator events are published besides DynamoDB, so others (a Slack notifier, say) can subscribe: an SNS
 * topic (encrypted with the AWS-managed key, SSL only) or an EventBridge bus. The functions find it through
 * EVENTS_TOPIC_ARN or EVENTS_BUS_NAME (functions/adapters/event-publisher.ts).
 */
export class EventsSink extends Construct {
  readonly topic?: Topic;
  readonly bus?: EventBus;
  /** The one variable that tells the publisher where to send. */
  readonly env: Record<string, string>;

  constructor(scope: Construct, id: string, props: EventsSinkProps) {
    super(scope, id);
    if (props.kind === 'sns') {
      this.topic = new Topic(this, 'Topic', {
        topicName: props.name,
        displayName: 'Release coordinator events',
        masterKey: Alias.fromAliasName(this, 'SnsKey', 'alias/aws/sns'),
        enforceSSL: true,
      });
      this.env = { EVENTS_TOPIC_ARN: this.topic.topicArn };
    } else {
      this.bus = new EventBus(this, 'Bus', { eventBusName: props.name });
      this.env = { EVENTS_BUS_NAME: this.bus.eventBusName };
    }
  }

  grantPublish(grantee: IGrantable): void {
    if (this.topic) this.topic.grantPublish(grantee);
    if (this.bus) this.bus.grantPutEventsTo(grantee);
  }
}
