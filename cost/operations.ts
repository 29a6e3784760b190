import type { PriceTable } from './prices.js';

/**
 * The bill of running the deployment beyond its requests: identity (Cognito: people and machine clients), watching it
 * (CloudWatch alarms, the dashboard, the functions' custom metrics, X-Ray traces), its KMS key and the tables'
 * point-in-time recovery. Counted from what the CDK app deploys (lib/observability.ts, lib/auth.ts,
 * lib/alarm-topic.ts); test/unit/lib/observability.test.ts holds ALARM_METRICS to the synthesized alarms.
 */

/** The metrics the alarms read: a metric-math alarm is billed for each metric of its expression. */
export const ALARM_METRICS = 15;
/** The CloudWatch dashboard of lib/observability.ts. */
export const DASHBOARDS = 1;
/** Customer-managed KMS keys: the alarm topic's. The tables use the AWS-managed key (no monthly fee). */
export const CUSTOMER_MANAGED_KEYS = 1;
/** Machine clients of the user pool: the coordinator's, the shared task-service client, the admin client. */
export const FIXED_M2M_CLIENTS = 3;
/** Functions that hold the coordinator's token (cached for its hour): ReleaseStep, HealthCheck, TaskServices. */
const TOKEN_HOLDERS = 3;
const HOURS_PER_MONTH = (365 * 24) / 12;
const SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600;
/** Metrics without a per-service dimension (functions/shared/metric-names.ts), and download methods. */
const FIXED_METRICS = 14;
const DOWNLOAD_METHODS = 4;
/** Per task service: action latency and failures per action (5 actions), and health-check failures. */
const METRICS_PER_SERVICE = 2 * 5 + 1;
/** DynamoDB asks KMS for a table's data key about every 5 minutes while the table is in use. */
const TABLES = 3;

export interface OperationsInputs {
  services: number;
  releasesPerMonth: number;
  callbacks: boolean;
  /** People who sign in during a month (Cognito monthly active users), in the pool itself and federated. */
  people: number;
  federatedPeople: number;
  /** Lambda invocations of the month, every function. */
  invocations: number;
  /** Size of the tables (point-in-time recovery is billed on it). */
  tableGb: number;
}

export interface OperationsSettings {
  /** A Cognito user pool (false with an external issuer, `oidcIssuer`). */
  cognito: boolean;
  /** X-Ray active tracing of the functions (the `tracing` setting). */
  tracing: boolean;
}

interface Line {
  service: string;
  item: string;
  quantity: number;
  unit: string;
  usd: number;
}

/**
 * Lambda's default sampling for active tracing: the first request of each second, then 5% of the rest; at the
 * monthly rates here, about one trace per invocation up to one per second.
 */
export function tracesRecorded(invocations: number): number {
  return Math.min(invocations, SECONDS_PER_MONTH) + 0.05 * Math.max(0, invocations - SECONDS_PER_MONTH);
}

export const customMetrics = (services: number) =>
  FIXED_METRICS + DOWNLOAD_METHODS + METRICS_PER_SERVICE * services;

export function operationsLines(i: OperationsInputs, s: OperationsSettings, prices: PriceTable): Line[] {
  const lines: Line[] = [];
  const line = (service: string, item: string, quantity: number, unit: string, usd: number) =>
    lines.push({ service, item, quantity, unit, usd });

  if (s.cognito) {
    const billable = Math.max(0, i.people - 10_000) + Math.max(0, i.federatedPeople - 50);
    line(
      'Cognito',
      'monthly active users (Essentials; 10,000 free, 50 federated)',
      i.people + i.federatedPeople,
      'MAU',
      billable * prices.cognitoMau.usd,
    );
    // Every task service is counted with a client of its own (create_client); one shared client costs less.
    const clients = FIXED_M2M_CLIENTS + i.services;
    line(
      'Cognito',
      'machine-to-machine app clients',
      clients,
      'clients',
      clients * prices.cognitoM2mClient.usd,
    );
    const tokens = HOURS_PER_MONTH * (TOKEN_HOLDERS + (i.callbacks ? i.services : 0));
    line(
      'Cognito',
      'client-credentials tokens (one an hour per holder)',
      tokens,
      'tokens',
      (tokens / 1000) * prices.cognitoM2mTokens.usd,
    );
  }

  line(
    'CloudWatch',
    'alarm metrics',
    ALARM_METRICS,
    'metrics',
    ALARM_METRICS * prices.cloudWatchAlarmMetric.usd,
  );
  line('CloudWatch', 'dashboard', DASHBOARDS, 'dashboards', DASHBOARDS * prices.cloudWatchDashboard.usd);
  const metrics = customMetrics(i.services);
  line(
    'CloudWatch',
    'custom metrics (per task service and action)',
    metrics,
    'metrics',
    metrics * prices.cloudWatchCustomMetric.usd,
  );

  // The state machine always traces (one trace per execution); the functions when `tracing` is on.
  const traces = i.releasesPerMonth + (s.tracing ? tracesRecorded(i.invocations) : 0);
  line('X-Ray', 'traces recorded', traces, 'traces', (traces / 1e6) * prices.xrayTracesRecorded.usd);

  line(
    'KMS',
    'customer-managed key (the alarm topic)',
    CUSTOMER_MANAGED_KEYS,
    'keys',
    CUSTOMER_MANAGED_KEYS * prices.kmsKey.usd,
  );
  const kmsRequests = TABLES * 12 * HOURS_PER_MONTH;
  line(
    'KMS',
    'requests (the tables’ data keys)',
    kmsRequests,
    'requests',
    (kmsRequests / 10_000) * prices.kmsRequests.usd,
  );

  line('DynamoDB', 'point-in-time recovery', i.tableGb, 'GB-month', i.tableGb * prices.dynamoPitrGbMonth.usd);
  return lines;
}
