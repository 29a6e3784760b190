import { CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  SingleValueWidget,
  TextWidget,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { FilterPattern, type ILogGroup, MetricFilter } from 'aws-cdk-lib/aws-logs';
import type { Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { METRIC, METRICS_SERVICE, SIGNED_URL_MINTED_LINE } from '#functions/shared/metric-names.js';
import { AlarmTopic } from './alarm-topic.js';
import type { Settings } from './settings.js';

/**
 * What an on-call operator watches (docs/operations.md has each alarm's meaning and runbook): a CloudWatch dashboard
 * of the functions' business metrics (EMF, functions/shared/metrics.ts) beside the APIs' and the state machine's own
 * metrics, alarms on the failures that need a person, and an SNS topic the alarms notify (lib/alarm-topic.ts: its own
 * KMS key, an e-mail subscription from `alarmEmail`), plus the operator's own topic from `alarmTopicArn`.
 */
export interface ObservabilityProps extends StackProps {
  settings: Settings;
  /** The two HTTP APIs, by the name the dashboard and the alarms give them. */
  apis: { name: string; apiId: string }[];
  stateMachineArn: string;
  /** FilesGraphql's log group: its minted signed URLs are counted by a metric filter (metric-names.ts). */
  graphqlLogGroup?: ILogGroup;
  /** The queues of asynchronous work that failed for good (lib/failure-queue.ts), by their alarm's id. */
  failureQueues?: { alarmId: string; queueName: string; what: string }[];
  /** Workers whose every error needs a person (the reconciler, the stream consumers), by manifest name. */
  workers?: { name: string; functionName: string; what: string }[];
}

const FIVE_MINUTES = Duration.minutes(5);

/** The alarms, by construct id: docs/operations.md has a section per id. */
export const ALARM_IDS = {
  releaseStuck: 'ReleaseStuck',
  releasesFailed: 'ReleasesFailed',
  taskServiceDown: 'TaskServiceDown',
  workerErrors: (worker: string) => `${worker}Errors`,
  api5xx: (api: string) => `${api}Api5xxRate`,
  executionsFailed: 'ExecutionsFailedOrTimedOut',
  reconcilerRedrives: 'ReconcilerRedrives',
  scheduleFailures: 'ScheduleFailures',
  streamFailures: 'StreamFailures',
  verificationFailures: 'VerificationFailures',
} as const;

export class ObservabilityStack extends Stack {
  readonly topic: Topic;
  readonly alarmTopic: AlarmTopic;
  readonly dashboard: Dashboard;
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id, props);
    const { settings } = props;
    const namespace = settings.metricsNamespace;

    this.alarmTopic = new AlarmTopic(this, 'AlarmTopic', {
      prefix: settings.prefix,
      email: settings.alarmEmail,
      existingTopicArn: settings.alarmTopicArn,
    });
    this.topic = this.alarmTopic.topic;
    new CfnOutput(this, 'AlarmTopicArn', {
      value: this.topic.topicArn,
      description: 'Subscribe on-call channels here',
    });

    /** One of the functions' own metrics (every point carries the `service` dimension). */
    const own = (name: string, statistic = 'Sum', dimensions: Record<string, string> = {}) =>
      new Metric({
        namespace,
        metricName: name,
        statistic,
        period: FIVE_MINUTES,
        dimensionsMap: { service: METRICS_SERVICE, ...dimensions },
      });
    /** Every series of a metric, whatever its dimension values (task service names, download methods). */
    const search = (name: string, dims: string[], statistic: string, label: string) =>
      new MathExpression({
        expression: `SEARCH('{${namespace},${['service', ...dims].join(',')}} MetricName="${name}"', '${statistic}', 300)`,
        label,
        usingMetrics: {},
        period: FIVE_MINUTES,
      });

    if (props.graphqlLogGroup)
      new MetricFilter(this, 'GraphqlSignedUrlsMinted', {
        logGroup: props.graphqlLogGroup,
        filterPattern: FilterPattern.stringValue('$.message', '=', SIGNED_URL_MINTED_LINE),
        metricNamespace: namespace,
        metricName: METRIC.signedUrlsMinted,
        metricValue: '1',
        dimensions: { service: '$.service' },
      });

    const notify = this.alarmTopic.destinations.map((topic) => new SnsAction(topic));
    const alarmNames: string[] = [];
    const alarm = (id: string, a: Omit<ConstructorParameters<typeof Alarm>[2], 'alarmName'>) => {
      const alarmName = `${settings.prefix}-${id}`;
      const made = new Alarm(this, id, { ...a, alarmName });
      made.addAlarmAction(...notify);
      made.addOkAction(...notify);
      this.alarms.push(made);
      alarmNames.push(alarmName);
      return made;
    };

    // A staging or publishing phase that has lasted long, measured from the phase's start (the reconciler reports
    // the oldest one's age every run), and alarmed below MAX_PHASE_SECONDS: a person hears of it before the phase
    // fails its tasks.
    const stuckHours = Math.round((settings.releaseStuckSeconds / 3600) * 10) / 10;
    alarm(ALARM_IDS.releaseStuck, {
      alarmDescription: `A release's staging or publishing phase has lasted ${stuckHours} h; MAX_PHASE_SECONDS fails it at ${settings.maxPhaseSeconds / 3600} h (docs/operations.md#releasestuck)`,
      metric: own(METRIC.oldestPhaseAge, 'Maximum'),
      threshold: settings.releaseStuckSeconds,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });

    alarm(ALARM_IDS.releasesFailed, {
      alarmDescription: 'A release failed in the last 5 minutes (docs/operations.md#releasesfailed)',
      metric: own(METRIC.releasesFailed),
      threshold: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });

    // The health check reports how many enabled services are down (HEALTH_FAILURES failed checks in a row) every run.
    alarm(ALARM_IDS.taskServiceDown, {
      alarmDescription:
        'An enabled task service is failing its health check: it is down, and its releases in progress fail (docs/operations.md#taskservicedown)',
      metric: own(METRIC.taskServicesDown, 'Maximum'),
      threshold: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });

    for (const w of props.workers ?? [])
      alarm(ALARM_IDS.workerErrors(w.name), {
        alarmDescription: `${w.what} (${w.name}) failed in the last 5 minutes (docs/operations.md#${ALARM_IDS.workerErrors(w.name).toLowerCase()})`,
        metric: new Metric({
          namespace: 'AWS/Lambda',
          metricName: 'Errors',
          statistic: 'Sum',
          period: FIVE_MINUTES,
          dimensionsMap: { FunctionName: w.functionName },
        }),
        threshold: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });

    const apiMetric = (apiId: string, metricName: string) =>
      new Metric({
        namespace: 'AWS/ApiGateway',
        metricName,
        statistic: 'Sum',
        period: FIVE_MINUTES,
        dimensionsMap: { ApiId: apiId, Stage: '$default' },
      });
    const rates: IMetric[] = [];
    for (const api of props.apis) {
      // Ids unique per API: both rates share one graph.
      const [errors, requests] = [`errors${api.name}`, `requests${api.name}`];
      const rate = new MathExpression({
        expression: `IF(${requests} > 0, 100 * ${errors} / ${requests}, 0)`,
        usingMetrics: { [errors]: apiMetric(api.apiId, '5xx'), [requests]: apiMetric(api.apiId, 'Count') },
        label: `${api.name} API 5xx %`,
        period: FIVE_MINUTES,
      });
      rates.push(rate);
      alarm(ALARM_IDS.api5xx(api.name), {
        alarmDescription: `More than ${settings.api5xxRatePercent}% of the ${api.name} API's requests answered 5xx in 5 minutes (docs/operations.md#api5xxrate)`,
        metric: rate,
        threshold: settings.api5xxRatePercent,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    }

    const states = (metricName: string) =>
      new Metric({
        namespace: 'AWS/States',
        metricName,
        statistic: 'Sum',
        period: FIVE_MINUTES,
        dimensionsMap: { StateMachineArn: props.stateMachineArn },
      });
    const broken = new MathExpression({
      expression: 'failed + timedOut',
      usingMetrics: { failed: states('ExecutionsFailed'), timedOut: states('ExecutionsTimedOut') },
      label: 'Executions failed or timed out',
      period: FIVE_MINUTES,
    });
    alarm(ALARM_IDS.executionsFailed, {
      alarmDescription:
        'A release state machine execution failed or timed out: infrastructure trouble the Retry could not absorb (docs/operations.md#executionsfailedortimedout)',
      metric: broken,
      threshold: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });

    alarm(ALARM_IDS.reconcilerRedrives, {
      alarmDescription:
        'The reconciler had to start an execution or deliver a wake that was lost (docs/operations.md#reconcilerredrives)',
      metric: own(METRIC.reconcilerRedrives),
      threshold: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });

    for (const q of props.failureQueues ?? [])
      alarm(q.alarmId, {
        alarmDescription: `${q.what} failed for good and waits in the ${q.alarmId} queue (docs/operations.md#${q.alarmId.toLowerCase()})`,
        metric: new Metric({
          namespace: 'AWS/SQS',
          metricName: 'ApproximateNumberOfMessagesVisible',
          statistic: 'Maximum',
          period: FIVE_MINUTES,
          dimensionsMap: { QueueName: q.queueName },
        }),
        threshold: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });

    this.alarmTopic.allowAlarms(alarmNames);

    const graph = (title: string, left: IMetric[], width = 12) =>
      new GraphWidget({ title, left, width, height: 6 });
    this.dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: `${settings.prefix}-operations`,
      defaultInterval: Duration.hours(24),
    });
    new CfnOutput(this, 'DashboardName', { value: `${settings.prefix}-operations` });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: `# ${settings.prefix}\nBusiness metrics in \`${namespace}\`; runbooks in docs/operations.md. CLI: \`drc releases ls --json\`.`,
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      graph('Releases', [
        own(METRIC.releasesCreated).with({ label: 'created' }),
        own(METRIC.releasesStaged).with({ label: 'staged' }),
        own(METRIC.releasesPublished).with({ label: 'published' }),
        own(METRIC.releasesFailed).with({ label: 'failed' }),
        own(METRIC.releasesCanceled).with({ label: 'canceled' }),
      ]),
      graph('Release durations (ms)', [
        own(METRIC.timeToStaged, 'Average').with({ label: 'creation -> staged (avg)' }),
        own(METRIC.timeToStaged, 'p90').with({ label: 'creation -> staged (p90)' }),
        own(METRIC.timeToPublished, 'Average').with({ label: 'publish -> published (avg)' }),
        own(METRIC.timeToPublished, 'p90').with({ label: 'publish -> published (p90)' }),
      ]),
    );
    this.dashboard.addWidgets(
      graph('Action latency p90 (ms), per task service and action', [
        search(METRIC.actionLatency, ['TaskService', 'Action'], 'p90', 'latency'),
      ]),
      graph('Action failures, per task service and action', [
        search(METRIC.actionFailures, ['TaskService', 'Action'], 'Sum', 'failures'),
      ]),
    );
    this.dashboard.addWidgets(
      graph(
        'Health-check failures, per task service',
        [search(METRIC.healthCheckFailures, ['TaskService'], 'Sum', 'failures')],
        8,
      ),
      graph('Downloads, by method', [search(METRIC.downloads, ['Method'], 'Sum', 'downloads')], 8),
      graph(
        'Signed URLs',
        [
          own(METRIC.signedUrlsMinted).with({ label: 'minted' }),
          own(METRIC.signedUrlsClaimed).with({ label: 'claimed' }),
        ],
        8,
      ),
    );
    this.dashboard.addWidgets(
      graph('API 5xx %', rates, 8),
      graph('State machine', [broken, states('ExecutionsStarted').with({ label: 'started' })], 8),
      graph(
        'Reconciler',
        [
          own(METRIC.reconcilerRedrives).with({ label: 'redrives' }),
          own(METRIC.activeReleases, 'Maximum').with({ label: 'active releases' }),
          own(METRIC.taskServicesDown, 'Maximum').with({ label: 'task services down' }),
        ],
        8,
      ),
    );
    this.dashboard.addWidgets(
      new SingleValueWidget({
        title: 'Oldest non-terminal release, oldest phase at work (hours)',
        metrics: [
          new MathExpression({
            expression: 'age / 3600',
            usingMetrics: { age: own(METRIC.oldestActiveReleaseAge, 'Maximum') },
            label: 'release',
            period: FIVE_MINUTES,
          }),
          new MathExpression({
            expression: 'phase / 3600',
            usingMetrics: { phase: own(METRIC.oldestPhaseAge, 'Maximum') },
            label: 'phase',
            period: FIVE_MINUTES,
          }),
        ],
        width: 8,
        height: 4,
      }),
    );
  }
}
