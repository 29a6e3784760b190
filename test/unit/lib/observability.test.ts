import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, describe, expect, it } from 'vitest';
import { ALARM_METRICS } from '#cost/operations.js';
import { METRIC } from '#functions/shared/metric-names.js';
import { buildApp } from '#lib/app.js';
import { readSettings } from '#lib/settings.js';

/**
 * CDK assertions on the operations stack: the CloudWatch dashboard of the functions' metrics, the alarms (with their
 * thresholds from context) and the SNS topic they notify, with its email subscription from context.
 *
 * @covers lib/observability.ts
 */
const outRoot = mkdtempSync(join(tmpdir(), 'cdk-observability-'));
afterAll(() => rmSync(outRoot, { recursive: true, force: true }));

function synth(context: Record<string, unknown> = {}) {
  const app = new App({
    outdir: mkdtempSync(join(outRoot, 'out-')),
    context: { 'aws:cdk:bundling-stacks': [], ...context },
  });
  const built = buildApp(app);
  const assembly = app.synth();
  const t = (s: Stack) => Template.fromJSON(assembly.getStackByName(s.stackName).template);
  return { built, ops: t(built.observability), coordinator: t(built.coordinator), files: t(built.files) };
}

const logicalId = (c: { node: { defaultChild?: unknown } }) =>
  Stack.of(c as never).getLogicalId((c as { node: { defaultChild: CfnElement } }).node.defaultChild);

/** The dashboard body as CloudFormation holds it (Fn::Join of strings and tokens), flattened to text. */
function dashboardBody(t: Template): string {
  const [dash] = Object.values(t.findResources('AWS::CloudWatch::Dashboard'));
  const body = dash.Properties.DashboardBody as { 'Fn::Join': [string, unknown[]] } | string;
  if (typeof body === 'string') return body;
  return body['Fn::Join'][1].map((p) => (typeof p === 'string' ? p : JSON.stringify(p))).join('');
}

function alarmNamed(t: Template, suffix: string) {
  const found = Object.entries(t.findResources('AWS::CloudWatch::Alarm')).filter(([, a]) =>
    String(a.Properties.AlarmName).endsWith(`-${suffix}`),
  );
  expect(found, suffix).toHaveLength(1);
  return found[0][1].Properties as Record<string, any>;
}

describe('operations: dashboard, alarms and alarm topic', () => {
  const s = synth();
  const topicId = logicalId(s.built.observability.topic);

  it('a dashboard shows every business metric, the APIs’ 5xx and the state machine', () => {
    s.ops.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const body = dashboardBody(s.ops);
    for (const name of [
      METRIC.releasesCreated,
      METRIC.releasesStaged,
      METRIC.releasesPublished,
      METRIC.releasesFailed,
      METRIC.releasesCanceled,
      METRIC.timeToStaged,
      METRIC.timeToPublished,
      METRIC.actionLatency,
      METRIC.actionFailures,
      METRIC.healthCheckFailures,
      METRIC.downloads,
      METRIC.signedUrlsMinted,
      METRIC.signedUrlsClaimed,
      METRIC.reconcilerRedrives,
      METRIC.oldestActiveReleaseAge,
      METRIC.oldestPhaseAge,
      METRIC.taskServicesDown,
    ])
      expect(body, name).toContain(name);
    expect(body).toContain('ReleaseCoordinator');
    // Per task service and action, whatever services are registered: a search over the dimension values.
    expect(body).toContain('SEARCH(');
    expect(body).toContain('TaskService,Action');
    expect(body).toContain('AWS/ApiGateway');
    expect(body).toContain('ExecutionsFailed');
    expect(body).toContain('ExecutionsTimedOut');
  });

  it('alarms on a phase at work for long, from the phase’s start and below MAX_PHASE_SECONDS, notifying the topic', () => {
    const a = alarmNamed(s.ops, 'ReleaseStuck');
    expect(a).toMatchObject({
      MetricName: METRIC.oldestPhaseAge,
      Namespace: 'ReleaseCoordinator',
      Statistic: 'Maximum',
      // Three quarters of the default MAX_PHASE_SECONDS (48 h).
      Threshold: 36 * 3600,
      ComparisonOperator: 'GreaterThanThreshold',
    });
    expect(a.AlarmActions).toEqual([{ Ref: topicId }]);
    expect(a.OKActions).toEqual([{ Ref: topicId }]);
    const custom = synth({ releaseStuckHours: '6', metricsNamespace: 'Drc/Test', maxPhaseSeconds: 7 * 3600 });
    expect(alarmNamed(custom.ops, 'ReleaseStuck')).toMatchObject({
      Threshold: 6 * 3600,
      Namespace: 'Drc/Test',
    });
    // Its default follows maxPhaseSeconds; one at or above it is refused.
    const settings = (context: Record<string, unknown>) => readSettings(new App({ context }).node);
    expect(settings({ maxPhaseSeconds: 8 * 3600 }).releaseStuckSeconds).toBe(6 * 3600);
    expect(() => settings({ releaseStuckHours: '48' })).toThrow(
      /releaseStuckHours: must be below maxPhaseSeconds/,
    );
  });

  it('alarms on any failed release, on an enabled task service that is down, and on reconciler and stream errors', () => {
    expect(alarmNamed(s.ops, 'ReleasesFailed')).toMatchObject({
      MetricName: METRIC.releasesFailed,
      Statistic: 'Sum',
      Period: 300,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [{ Ref: topicId }],
    });
    expect(alarmNamed(s.ops, 'TaskServiceDown')).toMatchObject({
      MetricName: METRIC.taskServicesDown,
      Statistic: 'Maximum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    for (const worker of ['Reconciler', 'PhaseWatch']) {
      const a = alarmNamed(s.ops, `${worker}Errors`);
      expect(a).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Statistic: 'Sum',
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        AlarmActions: [{ Ref: topicId }],
      });
      // That worker's function, by its name from the coordinator stack.
      expect(JSON.stringify(a.Dimensions)).toContain(
        logicalId(s.built.coordinator.functions[worker].fn as never),
      );
    }
  });

  it('alarms on each API’s 5xx rate (5xx over all requests, above the configured percentage)', () => {
    for (const [api, stack] of [
      ['Coordinator', s.built.coordinator],
      ['Files', s.built.files],
    ] as const) {
      const a = alarmNamed(s.ops, `${api}Api5xxRate`);
      expect(a.Threshold).toBe(5);
      const metrics = a.Metrics as { Id: string; Expression?: string; MetricStat?: any }[];
      expect(metrics.find((m) => m.Expression)?.Expression).toContain('100 *');
      const names = metrics.filter((m) => m.MetricStat).map((m) => m.MetricStat.Metric.MetricName);
      expect(names.sort()).toEqual(['5xx', 'Count']);
      // The API of that stack, by its id (imported across stacks).
      const dims = metrics.find((m) => m.MetricStat)?.MetricStat.Metric.Dimensions;
      expect(JSON.stringify(dims)).toContain(logicalId(stack.api.api));
      expect(a.AlarmActions).toEqual([{ Ref: topicId }]);
    }
    expect(alarmNamed(synth({ api5xxRatePercent: '1.5' }).ops, 'CoordinatorApi5xxRate').Threshold).toBe(1.5);
  });

  it('alarms on state-machine executions failed or timed out', () => {
    const a = alarmNamed(s.ops, 'ExecutionsFailedOrTimedOut');
    const metrics = a.Metrics as { Expression?: string; MetricStat?: any }[];
    expect(metrics.find((m) => m.Expression)?.Expression).toBe('failed + timedOut');
    expect(
      metrics
        .filter((m) => m.MetricStat)
        .map((m) => m.MetricStat.Metric.MetricName)
        .sort(),
    ).toEqual(['ExecutionsFailed', 'ExecutionsTimedOut']);
    expect(a).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
  });

  it('alarms when the reconciler had to redrive work', () => {
    expect(alarmNamed(s.ops, 'ReconcilerRedrives')).toMatchObject({
      MetricName: METRIC.reconcilerRedrives,
      Statistic: 'Sum',
      Threshold: 1,
      Dimensions: [{ Name: 'service', Value: 'release-coordinator' }],
    });
  });

  it('alarms when asynchronous work failed for good: a message in a schedule, stream or verification failure queue', () => {
    for (const [id, stack, queue] of [
      ['ScheduleFailures', s.built.coordinator, s.built.coordinator.scheduleFailures.queue],
      ['StreamFailures', s.built.coordinator, s.built.coordinator.streamFailures.queue],
      ['VerificationFailures', s.built.files, s.built.files.verificationFailures.queue],
    ] as const) {
      const a = alarmNamed(s.ops, id);
      expect(a).toMatchObject({
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        AlarmActions: [{ Ref: topicId }],
      });
      // The queue's name comes from its own stack, through an export.
      expect(JSON.stringify(a.Dimensions)).toContain('Fn::ImportValue');
      expect(stack.resolve(queue.queueName)).toBeDefined();
    }
  });

  it('the alarm topic has a rotated key of its own, which CloudWatch may use for these alarms only', () => {
    const keyId = logicalId(s.built.observability.alarmTopic.key);
    s.ops.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] } });
    const key = s.ops.toJSON().Resources[keyId].Properties;
    expect(key.EnableKeyRotation).toBe(true);
    const forCloudWatch = (key.KeyPolicy.Statement as any[]).filter((st) =>
      JSON.stringify(st.Principal).includes('cloudwatch.amazonaws.com'),
    );
    expect(forCloudWatch).toHaveLength(1);
    const [grant] = forCloudWatch;
    expect(grant).toMatchObject({
      Effect: 'Allow',
      Principal: { Service: 'cloudwatch.amazonaws.com' },
      Action: ['kms:GenerateDataKey*', 'kms:Decrypt'],
      Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
    });
    // One ARN per alarm of the stack, each by its name: no wildcard, no other alarm.
    const arns = grant.Condition.ArnLike['aws:SourceArn'] as unknown[];
    const names = Object.values(s.ops.findResources('AWS::CloudWatch::Alarm')).map(
      (a) => a.Properties.AlarmName as string,
    );
    expect(arns).toHaveLength(names.length);
    const text = JSON.stringify(arns);
    for (const name of names) expect(text).toContain(`:alarm:${name}`);
    expect(text).not.toContain('*');
  });

  it('notifies an existing topic given by alarmTopicArn besides its own', () => {
    const arn = 'arn:aws:sns:eu-west-1:123456789012:pager';
    const withTopic = synth({ alarmTopicArn: arn });
    const own = { Ref: logicalId(withTopic.built.observability.topic) };
    for (const a of Object.values(withTopic.ops.findResources('AWS::CloudWatch::Alarm'))) {
      expect(a.Properties.AlarmActions).toEqual([own, arn]);
      expect(a.Properties.OKActions).toEqual([own, arn]);
    }
    expect(() => synth({ alarmTopicArn: 'pager' })).toThrow(/alarmTopicArn: an SNS topic ARN/);
  });

  it('the alarm topic is SSL only and subscribes the alarmEmail from context', () => {
    s.ops.resourceCountIs('AWS::SNS::Subscription', 0);
    const withEmail = synth({ alarmEmail: 'oncall@example.org' });
    withEmail.ops.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.org',
      TopicArn: { Ref: logicalId(withEmail.built.observability.topic) },
    });
    expect(() => synth({ alarmEmail: 'not an address' })).toThrow(/alarmEmail/);
  });

  it('every alarm names its runbook: a section of docs/operations.md', () => {
    const doc = readFileSync(join(import.meta.dirname, '../../../docs/operations.md'), 'utf8');
    const headings = new Set(
      [...doc.matchAll(/^### (.*)$/gm)].map((m) =>
        m[1]
          .trim()
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    const alarms = Object.values(s.ops.findResources('AWS::CloudWatch::Alarm'));
    expect(alarms).toHaveLength(12);
    for (const a of alarms) {
      const anchor = /docs\/operations\.md#([a-z0-9-]+)/.exec(a.Properties.AlarmDescription)?.[1];
      expect(anchor, a.Properties.AlarmName).toBeDefined();
      expect(headings, a.Properties.AlarmName).toContain(anchor);
    }
  });

  it('the cost model counts the metrics the alarms read, as CloudWatch bills them', () => {
    const metrics = Object.values(s.ops.findResources('AWS::CloudWatch::Alarm')).map((a) =>
      a.Properties.MetricName
        ? 1
        : (a.Properties.Metrics as { MetricStat?: unknown }[]).filter((m) => m.MetricStat).length,
    );
    expect(metrics.reduce((n, m) => n + m, 0)).toBe(ALARM_METRICS);
  });

  it('counts GraphQL-minted signed URLs with a metric filter on that function’s log group', () => {
    s.ops.hasResourceProperties('AWS::Logs::MetricFilter', {
      FilterPattern: '{ $.message = "signed url minted" }',
      MetricTransformations: [
        Match.objectLike({ MetricName: METRIC.signedUrlsMinted, MetricNamespace: 'ReleaseCoordinator' }),
      ],
    });
  });

  it('functions get METRICS_NAMESPACE and X-Ray active tracing, unless tracing is off', () => {
    const fns = Object.values(s.coordinator.findResources('AWS::Lambda::Function'));
    expect(fns.length).toBeGreaterThan(5);
    for (const fn of fns) {
      expect(fn.Properties.Environment.Variables.METRICS_NAMESPACE).toBe('ReleaseCoordinator');
      expect(fn.Properties.TracingConfig).toEqual({ Mode: 'Active' });
    }
    s.coordinator.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      TracingConfiguration: { Enabled: true },
    });
    const off = synth({ tracing: 'false' });
    // No TracingConfig: Lambda's default, which records nothing of its own.
    for (const fn of Object.values(off.files.findResources('AWS::Lambda::Function')))
      expect(fn.Properties.TracingConfig).toBeUndefined();
  });
});
