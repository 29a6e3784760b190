/**
 * Finds every path by which an AWS service delivers to an SNS topic or an SQS queue in a set of CloudFormation
 * templates, and what stands in its way at the target's encryption. A topic or queue encrypted with a KMS key accepts
 * a service's messages only when that key's policy grants the service principal `kms:GenerateDataKey*` and
 * `kms:Decrypt` (the "compatibility with AWS services" sections of the SNS and SQS key-management guides,
 * docs/security.md); an AWS-managed key (`alias/aws/sns`, `alias/aws/sqs`) never does, since its policy cannot be
 * changed. Nothing fails at deploy: the messages are lost later, silently (CloudWatch records the failed action
 * only in the alarm's history).
 *
 * The paths:
 *   - CloudWatch alarms' actions (cloudwatch.amazonaws.com),
 *   - EventBridge rules' targets and their dead-letter queues (events.amazonaws.com),
 *   - S3 bucket notifications, plain or through CDK's notification resource (s3.amazonaws.com),
 *   - SNS subscriptions of SQS queues and their dead-letter queues (sns.amazonaws.com).
 *
 * A queue with SQS-managed encryption (SSE-SQS) or no encryption needs no key grant. A target outside the templates
 * (an operator's existing topic, named by ARN) cannot be checked here and is listed apart.
 *
 * @example
 *   const { problems } = checkServiceDeliveries({ [stack.stackName]: template.toJSON() });
 *   expect(problems).toEqual([]);
 */
export type Templates = Record<
  string,
  { Resources?: Record<string, Resource>; Outputs?: Record<string, any> }
>;
interface Resource {
  Type: string;
  Properties?: Record<string, any>;
}

export const SERVICE_PRINCIPALS = {
  cloudwatch: 'cloudwatch.amazonaws.com',
  events: 'events.amazonaws.com',
  s3: 's3.amazonaws.com',
  sns: 'sns.amazonaws.com',
} as const;

export interface Delivery {
  principal: string;
  /** `<stack>/<logical id>` of the resource that sends (the alarm, the rule, the bucket, the subscription). */
  from: string;
  /** `<stack>/<logical id>` of the topic or queue, or the value as written when it is outside the templates. */
  to: string;
  targetType?: 'AWS::SNS::Topic' | 'AWS::SQS::Queue';
}

export interface DeliveryReport {
  deliveries: Delivery[];
  /** One line per delivery the target's key would refuse. */
  problems: string[];
  /** Targets that are not resources of these templates (an ARN written out, a parameter). */
  external: Delivery[];
}

/** What the service calls on the key (`kms:GenerateDataKey*` grants the first). */
const REQUIRED_ACTIONS = ['kms:GenerateDataKey', 'kms:Decrypt'];

interface Located {
  stack: string;
  id: string;
  resource: Resource;
}

/** The resource a value points at: a Ref, a Fn::GetAtt, or an export of another template. */
function locate(templates: Templates, stack: string, value: unknown): Located | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const v = value as Record<string, any>;
  const inStack = (id: string) => {
    const resource = templates[stack]?.Resources?.[id];
    return resource ? { stack, id, resource } : undefined;
  };
  if (typeof v.Ref === 'string') return inStack(v.Ref);
  if (Array.isArray(v['Fn::GetAtt'])) return inStack(v['Fn::GetAtt'][0]);
  if (typeof v['Fn::ImportValue'] === 'string') {
    for (const [other, t] of Object.entries(templates))
      for (const output of Object.values(t.Outputs ?? {}))
        if (output?.Export?.Name === v['Fn::ImportValue']) return locate(templates, other, output.Value);
  }
  return undefined;
}

/** A value as text: a string itself, a Fn::Join of strings and pseudo parameters joined (`${AWS::Region}`). */
function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  const v = value as Record<string, any> | null;
  if (v && Array.isArray(v['Fn::Join']))
    return (v['Fn::Join'][1] as unknown[]).map((part) => textOf(part)).join(v['Fn::Join'][0]);
  if (v && typeof v.Ref === 'string') return `\${${v.Ref}}`;
  return JSON.stringify(value);
}

const asList = (v: unknown): unknown[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** Whether an action pattern of a policy (`kms:GenerateDataKey*`, `kms:*`) covers an action. */
const actionCovers = (granted: string[], needed: string) =>
  granted.some((g) =>
    new RegExp(`^${g.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`, 'i').test(needed),
  );

/** Why the key a target is encrypted with would refuse `principal`, or null when it grants it (or none is needed). */
function keyRefusal(templates: Templates, target: Located, principal: string): string | null {
  const p = target.resource.Properties ?? {};
  const keyRef = p.KmsMasterKeyId;
  if (keyRef === undefined) return null; // unencrypted, or SSE-SQS: no key to grant
  const managed = /(^|:)(alias\/aws\/[a-z0-9-]+)$/.exec(textOf(keyRef));
  if (managed)
    return `is encrypted with the AWS-managed key ${managed[2]}, whose policy cannot grant ${principal}`;
  if (typeof keyRef === 'string')
    return `is encrypted with the key ${keyRef}, outside these templates: its policy cannot be checked`;
  const key = locate(templates, target.stack, keyRef);
  if (key?.resource.Type !== 'AWS::KMS::Key')
    return `is encrypted with a key that is not a KMS key of these templates (${JSON.stringify(keyRef)})`;
  const statements = asList(key.resource.Properties?.KeyPolicy?.Statement) as Record<string, any>[];
  const granted = statements
    .filter((st) => st.Effect === 'Allow')
    .filter((st) => asList(st.Principal?.Service).includes(principal))
    .flatMap((st) => asList(st.Action) as string[]);
  const missing = REQUIRED_ACTIONS.filter((a) => !actionCovers(granted, a));
  return missing.length
    ? `is encrypted with ${key.stack}/${key.id}, whose policy does not grant ${principal} ${missing.join(' and ')}`
    : null;
}

/** Every delivery of the templates, from the resources that send to the values that name their targets. */
function findDeliveries(
  templates: Templates,
): { principal: string; stack: string; from: string; to: unknown }[] {
  const out: { principal: string; stack: string; from: string; to: unknown }[] = [];
  for (const [stack, t] of Object.entries(templates)) {
    for (const [id, r] of Object.entries(t.Resources ?? {})) {
      const p = r.Properties ?? {};
      const add = (principal: string, to: unknown) => out.push({ principal, stack, from: id, to });
      switch (r.Type) {
        case 'AWS::CloudWatch::Alarm':
          for (const key of ['AlarmActions', 'OKActions', 'InsufficientDataActions'])
            for (const to of asList(p[key])) add(SERVICE_PRINCIPALS.cloudwatch, to);
          break;
        case 'AWS::Events::Rule':
          for (const target of asList(p.Targets) as Record<string, any>[]) {
            add(SERVICE_PRINCIPALS.events, target.Arn);
            if (target.DeadLetterConfig?.Arn) add(SERVICE_PRINCIPALS.events, target.DeadLetterConfig.Arn);
          }
          break;
        case 'AWS::S3::Bucket':
        case 'Custom::S3BucketNotifications': {
          const n = p.NotificationConfiguration ?? {};
          for (const q of asList(n.QueueConfigurations) as Record<string, any>[])
            add(SERVICE_PRINCIPALS.s3, q.Queue ?? q.QueueArn);
          for (const c of asList(n.TopicConfigurations) as Record<string, any>[])
            add(SERVICE_PRINCIPALS.s3, c.Topic ?? c.TopicArn);
          break;
        }
        case 'AWS::SNS::Subscription':
          if (p.Protocol === 'sqs') add(SERVICE_PRINCIPALS.sns, p.Endpoint);
          if (p.RedrivePolicy?.deadLetterTargetArn)
            add(SERVICE_PRINCIPALS.sns, p.RedrivePolicy.deadLetterTargetArn);
          break;
        case 'AWS::SNS::Topic':
          for (const sub of asList(p.Subscription) as Record<string, any>[])
            if (sub.Protocol === 'sqs') add(SERVICE_PRINCIPALS.sns, sub.Endpoint);
          break;
      }
    }
  }
  return out;
}

const SERVICES_WITHOUT_KEYS = /^arn:[^:]+:(lambda|states|ssm|autoscaling|ec2|swf|automate|firehose|logs):/;
const written = (to: unknown) => (typeof to === 'string' ? to : JSON.stringify(to));

/** Checks every delivery of `templates` (stack name -> template JSON) against its target's key. */
export function checkServiceDeliveries(templates: Templates): DeliveryReport {
  const report: DeliveryReport = { deliveries: [], problems: [], external: [] };
  for (const d of findDeliveries(templates)) {
    const from = `${d.stack}/${d.from}`;
    const target = locate(templates, d.stack, d.to);
    if (!target) {
      // An ARN of a service that encrypts nothing with these keys (a Lambda target, an EC2 action) is no concern.
      if (typeof d.to === 'string' && SERVICES_WITHOUT_KEYS.test(d.to)) continue;
      report.external.push({ principal: d.principal, from, to: written(d.to) });
      continue;
    }
    const type = target.resource.Type;
    if (type !== 'AWS::SNS::Topic' && type !== 'AWS::SQS::Queue') continue;
    const delivery: Delivery = {
      principal: d.principal,
      from,
      to: `${target.stack}/${target.id}`,
      targetType: type,
    };
    report.deliveries.push(delivery);
    const why = keyRefusal(templates, target, d.principal);
    if (why) report.problems.push(`${from} -> ${delivery.to} (${d.principal}): the ${type} ${why}`);
  }
  return report;
}
