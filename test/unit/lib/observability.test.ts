import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, describe, expect, it } from 'vitest';
import { METRIC } from '#functions/shared/metric-names.js';
import { buildApp } from '#lib/app.js';

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

  it('alarms on a release not terminal after the configured age, notifying the topic', () => {
    const a = alarmNamed(s.ops, 'ReleaseStuck');
    expect(a).toMatchObject({
      MetricName: METRIC.oldestActiveReleaseAge,
      Namespace: 'ReleaseCoordinator',
      Statistic: 'Maximum',
      Threshold: 72 * 3600,
      ComparisonOperator: 'GreaterThanThreshold',
    });
    expect(a.AlarmActions).toEqual([{ Ref: topicId }]);
    expect(a.OKActions).toEqual([{ Ref: topicId }]);
    const custom = synth({ releaseMaxAgeHours: '6', metricsNamespace: 'Drc/Test' });
    expect(alarmNamed(custom.ops, 'ReleaseStuck')).toMatchObject({
      Threshold: 6 * 3600,
      Namespace: 'Drc/Test',
    });
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

  it('the alarm topic is encrypted, SSL only, and subscribes the alarmEmail from context', () => {
    s.ops.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
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
    expect(alarms).toHaveLength(8);
    for (const a of alarms) {
      const anchor = /docs\/operations\.md#([a-z0-9-]+)/.exec(a.Properties.AlarmDescription)?.[1];
      expect(anchor, a.Properties.AlarmName).toBeDefined();
      expect(headings, a.Properties.AlarmName).toContain(anchor);
    }
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
